package dev.dlock;

import java.util.ArrayList;
import java.util.List;

/**
 * The decisions of one acquisition across N nodes as a pure state machine
 * (client/src/acquisition.rs, the machine the model checker explores; go/acquisition.go;
 * conformance/acquisition.json): replies go in, the next steps come out.
 *
 * <p>Round by round (docs/protocol.md §5): wait on every node with one ticket as owner
 * {@code o:round}; with grants from a quorum, commit their largest token with FENCE on the
 * granting nodes (a grant is tentative until committed: a smaller ticket may wound it, and the
 * node then refuses the FENCE); committed on the quorum: held, otherwise release everything of
 * the round and wait again under a new owner name. With one node the grant is the lock. An
 * attempt that does not wait on the nodes runs one round only ({@link #startOnce}): the commit
 * waits for every node's answer and covers every node that granted; a commit that misses fails;
 * with fencing off the grants are the lock.
 */
final class Acquisition {
  /** What happened on a node. */
  enum EventKind {
    /** The ask of the round was granted with the token. */
    GRANTED,
    /** The ask ended without a grant. */
    UNAVAILABLE,
    /** The commit of the round answered ({@link Event#committed}). */
    FENCED
  }

  /** One reply fed into the machine; tokens are unsigned. */
  record Event(EventKind kind, int node, int round, long token, boolean committed) {
    static Event granted(int node, int round, long token) {
      return new Event(EventKind.GRANTED, node, round, token, false);
    }

    static Event unavailable(int node, int round) {
      return new Event(EventKind.UNAVAILABLE, node, round, 0, false);
    }

    static Event fenced(int node, int round, boolean committed) {
      return new Event(EventKind.FENCED, node, round, 0, committed);
    }
  }

  /** What the machine asks for. */
  enum StepKind {
    /** Ask the nodes as the owner of the round. */
    WAIT,
    /** Commit the token on the nodes as the owner of the round. */
    FENCE,
    /** Release the owner of the round on the nodes. */
    RELEASE,
    /** Held with the token. */
    HELD,
    /** The acquisition failed. */
    FAILED
  }

  /** One thing for the driver to do. */
  record Step(StepKind kind, int round, long token, List<Integer> nodes) {
    Step {
      nodes = List.copyOf(nodes);
    }
  }

  private enum Phase { WAITING, COMMITTING, HELD, FAILED }

  private final int nodes;
  private final int needed;
  private final boolean once;
  private final boolean commit;
  private int round;
  private long[] granted; // 0: no grant this round (tokens start at 1)
  private boolean[] unavailable;
  private Phase phase = Phase.WAITING;
  private long token;
  private boolean[] pending;
  private boolean[] committed;

  private Acquisition(int nodes, int needed, boolean once, boolean commit) {
    this.nodes = Math.max(nodes, 0);
    // At least one, at most every node (a quorum over N could never be met).
    int n = Math.max(needed, 1);
    this.needed = nodes > 0 ? Math.min(n, nodes) : n;
    this.once = once;
    this.commit = commit;
    this.granted = new long[this.nodes];
    this.unavailable = new boolean[this.nodes];
  }

  /** The machine and its first steps. */
  record Started(Acquisition machine, List<Step> steps) {}

  private static Started start(int nodes, int needed, boolean once, boolean commit) {
    Acquisition a = new Acquisition(nodes, needed, once, commit);
    return new Started(a, List.of(new Step(StepKind.WAIT, 0, 0, upTo(a.nodes))));
  }

  /** Round 0 of an acquisition held once {@code needed} nodes committed. */
  static Started startAcquisition(int nodes, int needed) {
    return start(nodes, needed, false, true);
  }

  /** One round without a server wait: held once {@code needed} nodes committed (or granted). */
  static Started startOnce(int nodes, int needed, boolean commit) {
    return start(nodes, needed, true, commit);
  }

  static List<Integer> upTo(int n) {
    List<Integer> all = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      all.add(i);
    }
    return all;
  }

  /** The current round. */
  int round() {
    return round;
  }

  /** The quorum this machine counts to. */
  int needed() {
    return needed;
  }

  /** Tells a held acquisition. */
  boolean isHeld() {
    return phase == Phase.HELD;
  }

  /** The token once held (meaningful only when {@link #isHeld}; unsigned). */
  long token() {
    return token;
  }

  /** Tells a held or failed acquisition. */
  boolean isOver() {
    return phase == Phase.HELD || phase == Phase.FAILED;
  }

  /** Gives up from outside (a deadline, a refused kind): release everything of this round. */
  List<Step> abandon() {
    return isOver() ? List.of() : fail();
  }

  /**
   * Feeds one reply. Replies of earlier rounds are stale: ignored, except a grant, which is
   * released at once (it would otherwise hold the lock on that node until its TTL).
   */
  List<Step> on(Event e) {
    if (e.node() < 0 || e.node() >= nodes) {
      return List.of();
    }
    if (e.round() != round) {
      if (e.kind() == EventKind.GRANTED && e.round() < round) {
        return List.of(new Step(StepKind.RELEASE, e.round(), 0, List.of(e.node())));
      }
      return List.of();
    }
    switch (e.kind()) {
      case GRANTED:
        granted[e.node()] = e.token();
        if (phase != Phase.WAITING) {
          return List.of(); // a late grant: released with everything else at the end
        }
        return commitWhenReady();
      case UNAVAILABLE:
        return onUnavailable(e.node());
      default:
        return onFenced(e.node(), e.committed());
    }
  }

  /** The nodes that granted this round. */
  List<Integer> grantedNodes() {
    List<Integer> out = new ArrayList<>();
    for (int n = 0; n < nodes; n++) {
      if (granted[n] != 0) {
        out.add(n);
      }
    }
    return out;
  }

  // With grants from a quorum (and, in one round only, every node's answer in, so that the
  // commit covers every node that granted), commit the largest token, or hold it.
  private List<Step> commitWhenReady() {
    List<Integer> grants = grantedNodes();
    if (grants.size() < needed || (once && !allAnswered())) {
      return List.of();
    }
    long top = 0;
    for (int n : grants) {
      if (Long.compareUnsigned(granted[n], top) > 0) {
        top = granted[n];
      }
    }
    if (nodes == 1 || !commit) {
      return hold(top);
    }
    phase = Phase.COMMITTING;
    token = top;
    pending = new boolean[nodes];
    committed = new boolean[nodes];
    for (int n : grants) {
      pending[n] = true;
    }
    return List.of(new Step(StepKind.FENCE, round, top, grants));
  }

  private boolean allAnswered() {
    for (int n = 0; n < nodes; n++) {
      if (granted[n] == 0 && !unavailable[n]) {
        return false;
      }
    }
    return true;
  }

  private List<Step> onUnavailable(int node) {
    unavailable[node] = true;
    int possible = 0;
    for (boolean u : unavailable) {
      if (!u) {
        possible++;
      }
    }
    if (phase == Phase.WAITING && possible < needed) {
      return fail();
    }
    if (phase == Phase.WAITING && once) {
      return commitWhenReady(); // maybe the last answer awaited
    }
    return List.of();
  }

  // No quorum this time: release everything of this round and give up.
  private List<Step> fail() {
    phase = Phase.FAILED;
    return List.of(releaseAll(), new Step(StepKind.FAILED, 0, 0, List.of()));
  }

  private List<Step> onFenced(int node, boolean ok) {
    if (phase != Phase.COMMITTING || !pending[node]) {
      return List.of(); // not committing, or a duplicate
    }
    pending[node] = false;
    committed[node] = ok;
    int count = 0;
    int open = 0;
    for (int n = 0; n < nodes; n++) {
      count += committed[n] ? 1 : 0;
      open += pending[n] ? 1 : 0;
    }
    if (count >= needed) {
      return hold(token);
    }
    if (count + open < needed) {
      return once ? fail() : nextRound();
    }
    return List.of();
  }

  // Held. Waits still queued on nodes that did not grant stay (a late grant there is the
  // holder's too).
  private List<Step> hold(long top) {
    phase = Phase.HELD;
    token = top;
    return List.of(new Step(StepKind.HELD, 0, top, List.of()));
  }

  // The commit missed the quorum: release everything of this round, wait again.
  private List<Step> nextRound() {
    Step release = releaseAll();
    round++;
    granted = new long[nodes];
    unavailable = new boolean[nodes];
    phase = Phase.WAITING;
    return List.of(release, new Step(StepKind.WAIT, round, 0, upTo(nodes)));
  }

  private Step releaseAll() {
    return new Step(StepKind.RELEASE, round, 0, upTo(nodes));
  }
}
