package dev.dlock;

import dev.dlock.Replies.Policy;
import dev.dlock.transport.Cluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A set across slots on a Redis Cluster node (docs/multi.md "Redis Cluster"; go/sets_cluster.go,
 * client/src/set_guard.rs): taken group by group in the one global order ({@link Sets#groups}),
 * each group a set of its own through the set path and its own {@link Lease}; held as one
 * {@link Lease} whose calls come here. Loss of any group loses the whole and gives back the rest;
 * a failure while taking gives back every group held; {@link Lease#token} is refused (one token
 * per group: {@link Lease#tokens}).
 */
final class Across {
  private final List<Lease> groups; // in the order taken: slot order
  private final int[] of; // the group of each resource, in the caller's order

  private Across(List<Lease> groups, int[] of) {
    this.groups = List.copyOf(groups);
    this.of = of;
  }

  /**
   * Takes {@code set} group by group within one deadline (the wait given, shared by every group;
   * without one, one attempt per group). A group that fails gives back the groups held, and its
   * error is the call's, unchanged (it names the group).
   */
  static Lease take(LockManager m, Sets.Members set, List<List<String>> groups, Duration ttl, Optional<Duration> wait,
      boolean interruptible) throws InterruptedException {
    long end = System.nanoTime() + wait.map(Duration::toNanos).orElse(0L);
    List<Lease> held = new ArrayList<>();
    Map<String, Integer> group = new HashMap<>();
    try {
      for (int i = 0; i < groups.size(); i++) {
        for (String k : groups.get(i)) {
          group.put(k, i);
        }
        Optional<Duration> left = wait.map(w -> Duration.ofNanos(Math.max(end - System.nanoTime(), 0)));
        held.add(one(m, set.subset(groups.get(i)), ttl, left, interruptible));
      }
    } catch (InterruptedException | RuntimeException e) {
      giveBack(held, e);
      throw e;
    }
    int[] of = set.keys().stream().mapToInt(group::get).toArray();
    Across x = new Across(held, of);
    Driver.Granted won = new Driver.Granted(x.owner(), 0, x.validUntil(), new Signal(), List.of());
    Lease whole = new Lease(new Calls(m.backend(), set.name(), Kind.EXCLUSIVE, Optional.of(set)), ttl, won, false, x);
    for (Lease g : held) {
      g.onLost(() -> x.lose(whole));
    }
    whole.onLost(x::giveBackLost);
    return whole;
  }

  // Releases every group, the last taken first; a failure to release is added to why.
  private static void giveBack(List<Lease> held, Throwable why) {
    for (int i = held.size() - 1; i >= 0; i--) {
      try {
        held.get(i).release();
      } catch (DlockException e) {
        why.addSuppressed(e); // that group lingers until its TTL: the caller's error says so
      }
    }
  }

  /** The groups' owners, comma-separated, in slot order. */
  String owner() {
    return String.join(",", groups.stream().map(Lease::owner).toList());
  }

  /** The set's validity end (nanoTime): its first group's to end. */
  long validUntil() {
    long first = groups.get(0).validUntil();
    for (Lease g : groups) {
      first = g.validUntil() - first < 0 ? g.validUntil() : first;
    }
    return first;
  }

  /** {@link Lease#token}'s refusal: a set across slots has a token per group. */
  InvalidArgumentException oneToken() {
    return new InvalidArgumentException("a set across " + groups.size()
        + " slots has one token per slot group: use tokens()");
  }

  /** Each resource's token, its group's (a commit owed paid first); a commit that fails loses the set. */
  List<Long> tokens(Lease whole) {
    long[] each = new long[groups.size()];
    for (int i = 0; i < each.length; i++) {
      try {
        each[i] = groups.get(i).token();
      } catch (LockLostException e) {
        lose(whole);
        throw new LockLostException(whole.resource());
      }
    }
    List<Long> out = new ArrayList<>();
    for (int g : of) {
      out.add(each[g]);
    }
    return List.copyOf(out);
  }

  /**
   * Extends every group to {@code ttl}: a group lost loses the set (the rest given back); one not
   * confirmed ({@link NoQuorumException}) leaves the set held to its earlier end, as one lock.
   */
  void extend(Lease whole, Duration ttl) {
    for (Lease g : groups) {
      try {
        g.extend(ttl);
      } catch (LockLostException e) {
        lose(whole);
        throw new LockLostException(whole.resource());
      }
    }
    whole.renewed(validUntil(), ttl);
  }

  /** One extension of every group, for the set's watchdog: refused if any group was refused. */
  Renewal.Extension extendOnce(Lease whole) {
    Renewal.Extension worst = Renewal.Extension.EXTENDED;
    for (Lease g : groups) {
      Renewal.Extension e = g.isLost() ? Renewal.Extension.REFUSED : g.extendOnce();
      if (e == Renewal.Extension.REFUSED) {
        return e; // the watchdog loses the set, and its loss gives back the rest
      }
      if (e != Renewal.Extension.EXTENDED) {
        worst = e;
      }
    }
    whole.renewed(validUntil(), whole.ttl()); // the earliest group's end, extended or not
    return worst;
  }

  /** Loses the set (once): its listeners, among them {@link #giveBackLost}, run. */
  void lose(Lease whole) {
    whole.lose(new LockLostException(whole.resource()));
  }

  // The set was lost: what is still held of it goes back now rather than at its TTL.
  private void giveBackLost() {
    for (int i = groups.size() - 1; i >= 0; i--) {
      try {
        groups.get(i).release();
      } catch (NoQuorumException e) {
        // That group lingers until its TTL, as a lost lock's grants on silent nodes do: the loss
        // was already reported (listeners, isLost), and no caller waits on this background call.
        continue;
      }
    }
  }

  /** Gives back every group, the last taken first; the first failure is thrown once all were tried. */
  void release() {
    NoQuorumException first = null;
    for (int i = groups.size() - 1; i >= 0; i--) {
      try {
        groups.get(i).release();
      } catch (NoQuorumException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  /** How many slot groups hold the set. */
  int size() {
    return groups.size();
  }

  /**
   * Takes a set ({@link LockManager#tryAcquireAll} and the rest): one DLOCK.ACQUIREALL per node
   * through the single lock's driver; on a Redis Cluster node, a set across slots group by group
   * ({@link Across}). Never through {@link LocalWaits}: a set waits on the nodes each time
   * (docs/waiting.md), as a turn per resource in the process, taken one after another, would be
   * the hold-and-wait that sets exist to avoid.
   */
  static Lease take(LockManager m, ResourceSet set, Duration ttl, Optional<Duration> wait, boolean interruptible)
      throws InterruptedException {
    if (set == null) {
      throw new InvalidArgumentException("the set must be given");
    }
    Backend b = m.backend();
    Checks.checkLease(ttl, b.options.drift());
    wait.ifPresent(Checks::checkWait);
    if (b.isClosed()) {
      throw new ManagerClosedException(set.members().name());
    }
    Duration whole = Duration.ofMillis(ttl.toMillis());
    List<List<String>> groups = Sets.groups(set.names(), Cluster::keySlot);
    // One call per master: only a Cluster node splits a set, and only one across slots.
    if (groups.size() > 1 && b.nodes.stream().anyMatch(n -> n instanceof Cluster)) {
      return take(m, set.members(), groups, whole, wait, interruptible);
    }
    return one(m, set.members(), whole, wait, interruptible);
  }

  /** One set on every node (also each group of a set across slots), as one lock is taken. */
  static Lease one(LockManager m, Sets.Members set, Duration ttl, Optional<Duration> wait, boolean interruptible)
      throws InterruptedException {
    Backend b = m.backend();
    Calls c = new Calls(b, set.name(), Kind.EXCLUSIVE, Optional.of(set));
    // A set needs the exclusive lock's quorum whatever its modes; the commit is owed as one lock's.
    boolean owes = Commit.owed(true, b.nodes.size(), b.options.fencing());
    if (wait.isEmpty()) {
      return m.run(c, ttl, Duration.ZERO, Policy.NO_WAIT_UNCOMMITTED, owes, true, interruptible);
    }
    if (!b.queue) {
      return m.run(c, ttl, wait.get(), Policy.NO_WAIT_UNCOMMITTED, owes, false, interruptible);
    }
    return m.run(c, ttl, wait.get(), Policy.QUEUE, false, false, interruptible);
  }
}
