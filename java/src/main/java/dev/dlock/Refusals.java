package dev.dlock;

import dev.dlock.transport.NodeFailure;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A refusal in a connection's setup that waiting cannot cure (conformance/README.md: credentials
 * or permission refused, a database the server does not have; {@link NodeFailure#refused}) is
 * final for the call that met it (go/refusals.go, client/src/refusals.rs): the acquirer keeps it
 * and answers every later ask of that node with it instead of connecting again, and the attempt
 * ({@link Attempt}) ends the call once such nodes leave a quorum out of reach. These are the pure
 * parts; the I/O step keeps the set of refused nodes per call.
 */
final class Refusals {
  private Refusals() {}

  /** {@code nodes} but those refused for the call (nothing of the call is on them). */
  static List<Integer> reachable(List<Integer> nodes, Set<Integer> refused) {
    List<Integer> left = new ArrayList<>();
    for (int n : nodes) {
      if (!refused.contains(n)) {
        left.add(n);
      }
    }
    return left;
  }

  /**
   * An attempt ended by refusals for the call names every node known to have failed: {@code
   * failures} with {@code more} (the replies in hand but not fed yet) not already named, in the
   * nodes' order ({@code names}: each node's name, in the order given).
   */
  static List<NodeFailure> told(List<NodeFailure> failures, List<NodeFailure> more, List<String> names) {
    List<NodeFailure> all = new ArrayList<>(failures);
    for (NodeFailure f : more) {
      if (!named(all, f.node())) {
        all.add(f);
      }
    }
    Map<String, Integer> place = new HashMap<>();
    for (int i = 0; i < names.size(); i++) {
      place.putIfAbsent(names.get(i), i);
    }
    // Stable: failures of nodes not listed keep their order, last.
    all.sort(Comparator.comparingInt(f -> place.getOrDefault(f.node(), Integer.MAX_VALUE)));
    return all;
  }

  private static boolean named(List<NodeFailure> failures, String node) {
    return failures.stream().anyMatch(f -> f.node().equals(node));
  }
}
