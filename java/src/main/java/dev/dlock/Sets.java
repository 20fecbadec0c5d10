package dev.dlock;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.ToIntFunction;

/**
 * Several resources taken at once as one set (docs/multi.md; go/sets.go; conformance/sets.json):
 * its keys and modes checked before any I/O, and the order a Redis Cluster takes its slot groups
 * in. Each node answers a set as it answers one lock (DLOCK.ACQUIREALL: one token or nil), so the
 * engine is the single lock's; only the commands differ ({@link Commands}).
 */
final class Sets {
  /** The most resources a set takes (the module's limit). */
  static final int MAX_SET = 16;

  private Sets() {}

  /**
   * A set's keys, in the caller's order, and their modes: one letter per key (x exclusive, s
   * shared), "" when every key is exclusive.
   */
  record Members(List<String> keys, String modes) {
    Members {
      keys = List.copyOf(keys);
    }

    /** How errors and a lock's resource name the set: its keys, comma-separated. */
    String name() {
      return String.join(",", keys);
    }

    /** The members {@code sub} (of these keys), with their modes. */
    Members subset(List<String> sub) {
      if (modes.isEmpty()) {
        return new Members(sub, "");
      }
      Map<String, Character> mode = new HashMap<>();
      for (int i = 0; i < keys.size(); i++) {
        mode.put(keys.get(i), modes.charAt(i));
      }
      StringBuilder letters = new StringBuilder();
      for (String k : sub) {
        letters.append(mode.getOrDefault(k, 'x'));
      }
      return new Members(sub, letters.indexOf("s") >= 0 ? letters.toString() : "");
    }
  }

  /**
   * Checks a set: 1 to {@link #MAX_SET} resources, none empty or given twice, and {@code modes}
   * (null: none given) one {@link Kind#EXCLUSIVE} or {@link Kind#SHARED} per resource.
   */
  static Members members(List<String> keys, List<Kind> modes) {
    if (keys == null || keys.isEmpty()) {
      throw new InvalidArgumentException("a set needs at least one resource");
    }
    if (keys.size() > MAX_SET) {
      throw new InvalidArgumentException("a set takes at most " + MAX_SET + " resources, got " + keys.size());
    }
    Set<String> seen = new HashSet<>();
    for (String k : keys) {
      Checks.checkName(k);
      if (!seen.add(k)) {
        throw new InvalidArgumentException("resource " + DlockException.quote(k) + " is given twice in the set");
      }
    }
    if (modes == null) {
      return new Members(keys, "");
    }
    if (modes.size() != keys.size()) {
      throw new InvalidArgumentException("modes needs one mode per resource: " + keys.size()
          + " resources, " + modes.size() + " modes");
    }
    StringBuilder letters = new StringBuilder();
    for (int i = 0; i < modes.size(); i++) {
      Kind k = modes.get(i);
      if (Kind.EXCLUSIVE.equals(k)) {
        letters.append('x');
      } else if (Kind.SHARED.equals(k)) {
        letters.append('s');
      } else {
        throw new InvalidArgumentException("a set's resource is exclusive or shared, got " + k
            + " for " + DlockException.quote(keys.get(i)));
      }
    }
    return new Members(keys, letters.indexOf("s") >= 0 ? letters.toString() : "");
  }

  /**
   * How a Redis Cluster takes keys across slots: the keys of one slot together, the groups in
   * slot order, the keys of a group sorted by bytes (one global order, so holding one group
   * while waiting for the next cannot deadlock).
   */
  static List<List<String>> groups(List<String> keys) {
    return groups(keys, dev.dlock.transport.Cluster::keySlot);
  }

  /** {@link #groups(List)} with the slot of a key given (the transport's KeySlot). */
  static List<List<String>> groups(List<String> keys, ToIntFunction<String> slotOf) {
    List<String> sorted = new ArrayList<>(keys);
    sorted.sort(Comparator.<String>comparingInt(slotOf).thenComparing(Sets::compareBytes));
    List<List<String>> out = new ArrayList<>();
    for (int i = 0; i < sorted.size(); i++) {
      String k = sorted.get(i);
      if (i > 0 && slotOf.applyAsInt(k) == slotOf.applyAsInt(sorted.get(i - 1))) {
        out.get(out.size() - 1).add(k);
      } else {
        out.add(new ArrayList<>(List.of(k)));
      }
    }
    return out;
  }

  // By their UTF-8 bytes, unsigned, as Go and Rust compare strings (not by UTF-16 units).
  private static int compareBytes(String a, String b) {
    return Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }


}
