package dev.dlock;

import java.util.ArrayList;
import java.util.List;

/**
 * The commit a hold may owe, as a pure machine (client/src/commit.rs, go/commit.go;
 * conformance/commits.json; docs/protocol.md §4.1). The I/O step keeps, per lock, what it owes
 * and the one flight that pays it (Go's {@code owing} and {@code flight}), and feeds this machine
 * the FENCE replies.
 *
 * <p>An attempt that does not wait on the nodes (try-lock, retry mode) holds once a quorum
 * granted: its grants are plain, and no ticket can wound them, so exclusion does not need the
 * commit. Its token does: the largest grant is a fencing token only once a quorum committed it.
 * So the commit is paid when the token is first read, and only then: FENCE on every node that
 * granted, the hold's token, the lease set afresh. A quorum of commits gives the token; too few
 * left possible makes the lock lost, never an uncommitted token. A queued hold committed before it
 * was held, one node has nothing to commit, and with fencing off there is no token to commit.
 */
final class Commit {
  /** Where a commit stands. */
  enum Outcome {
    /** Replies still decide it; reading the token waits. */
    PENDING,
    /** A quorum committed the token ({@link Commit#token}). */
    COMMITTED,
    /** Too few nodes can still commit: the lock is lost. */
    LOST
  }

  private final int needed;
  private final long token;
  private final boolean[] pending; // the nodes asked whose answer has not come
  private int committed;
  private Outcome outcome = Outcome.PENDING;

  /** The machine and the nodes to send FENCE to. */
  record Started(Commit commit, List<Integer> asked) {}

  private Commit(int nodes, int needed, long token) {
    this.needed = Math.max(needed, 1);
    this.token = token;
    this.pending = new boolean[Math.max(nodes, 0)];
  }

  /**
   * Whether a hold taken by an attempt of this kind owes a commit before its token is read: one
   * that did not wait on the nodes, on more than one node, with fencing on.
   */
  static boolean owed(boolean noWait, int nodes, boolean fencing) {
    return noWait && nodes > 1 && fencing;
  }

  /**
   * Starts the commit of {@code token} on {@code holding} (the nodes that granted it), committed
   * once {@code needed} of them committed.
   */
  static Started start(int nodes, int needed, long token, List<Integer> holding) {
    Commit c = new Commit(nodes, needed, token);
    List<Integer> asked = new ArrayList<>();
    for (int n : holding) {
      if (n >= 0 && n < c.pending.length && !c.pending[n]) {
        asked.add(n);
        c.pending[n] = true;
      }
    }
    c.decide();
    return new Started(c, asked);
  }

  /** The token committed (unsigned). */
  long token() {
    return token;
  }

  /** Where the commit stands. */
  Outcome outcome() {
    return outcome;
  }

  /**
   * A node's answer to its FENCE, committed or not (refused: no longer held by this owner; or the
   * node failed). Answers from nodes not asked, repeated, or after the outcome is decided change
   * nothing.
   */
  Outcome onFenced(int node, boolean ok) {
    if (outcome != Outcome.PENDING || node < 0 || node >= pending.length || !pending[node]) {
      return outcome;
    }
    pending[node] = false;
    if (ok) {
      committed++;
    }
    decide();
    return outcome;
  }

  private void decide() {
    int open = 0;
    for (boolean p : pending) {
      open += p ? 1 : 0;
    }
    if (committed >= needed) {
      outcome = Outcome.COMMITTED;
    } else if (committed + open < needed) {
      outcome = Outcome.LOST;
    }
  }
}
