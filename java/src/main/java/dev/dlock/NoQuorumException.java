package dev.dlock;

import dev.dlock.transport.NodeFailure;
import java.util.List;
import java.util.stream.Collectors;

/** Too few nodes answered for a quorum: which nodes failed, and why. */
public class NoQuorumException extends DlockException {
  private static final long serialVersionUID = 1L;

  private final String resource;
  private final int needed;
  private final List<NodeFailure> failures;

  /** No quorum for {@code resource}: {@code needed} nodes had to grant, {@code failures} did not. */
  public NoQuorumException(String resource, int needed, List<NodeFailure> failures) {
    super(message(resource, needed, failures));
    this.resource = resource;
    this.needed = needed;
    this.failures = List.copyOf(failures);
  }

  // The nodes needed, then each failed node and why.
  private static String message(String resource, int needed, List<NodeFailure> failures) {
    String said = "no quorum for " + quote(resource) + ": " + count(needed, "node") + " needed, "
        + failures.size() + " failed";
    if (failures.isEmpty()) {
      return said;
    }
    return said + ": " + failures.stream().map(NodeFailure::toString).collect(Collectors.joining("; "));
  }

  /** The resource's name. */
  public String resource() {
    return resource;
  }

  /** The nodes that had to grant (a majority, or a semaphore's larger quorum). */
  public int needed() {
    return needed;
  }

  /** Each node that failed, and why. */
  public List<NodeFailure> failures() {
    return failures;
  }
}
