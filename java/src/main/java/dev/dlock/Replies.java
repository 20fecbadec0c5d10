package dev.dlock;

import dev.dlock.transport.NodeFailure;
import java.util.Objects;
import java.util.Optional;

/**
 * How a node's answer to an ask counts (client/src/attempt.rs {@code classify}, go/attempt.go
 * {@code classify}; conformance/replies.json): a grant; busy, the lock held by others (nil, or a
 * queued wait that ran past the deadline unanswered: a server notices a wait's timeout only at
 * its next tick, so the client's own time for the call may run out first); a node failure; the
 * kind refused (WRONGKIND: asking again cannot change it); or an argument refused.
 */
final class Replies {
  private Replies() {}

  /**
   * How an attempt asks the nodes: queued on them (ACQUIRE ... WAIT, round after round until the
   * deadline, the commit starting the lease afresh), or one plain ACQUIRE per node in one round
   * (try-lock, retry mode), with or without the commit. The driver runs the one-round attempt
   * without its commit ({@link #NO_WAIT_UNCOMMITTED}): a commit it owes is paid when the token is
   * first read ({@link Commit}); {@link #NO_WAIT} stays pinned by conformance/attempts.json.
   */
  record Policy(boolean queue, boolean commit) {
    static final Policy QUEUE = new Policy(true, true);
    static final Policy NO_WAIT = new Policy(false, true);
    static final Policy NO_WAIT_UNCOMMITTED = new Policy(false, false);
  }

  /**
   * A node's answer to an ask: a token (unsigned, non-zero: granted), nil (zero, no failure), or
   * why there is none.
   */
  record Reply(long token, Optional<NodeFailure> failure) {
    Reply {
      Objects.requireNonNull(failure, "failure");
    }

    static Reply granted(long token) {
      return new Reply(token, Optional.empty());
    }

    static Reply nil() {
      return new Reply(0, Optional.empty());
    }

    static Reply failed(NodeFailure failure) {
      return new Reply(0, Optional.of(failure));
    }

    boolean isGrant() {
      return failure.isEmpty() && token != 0;
    }
  }

  /** How a reply counts. */
  enum Counts {
    /** No answer yet (a node's outcome before its reply). */
    NONE,
    GRANTED,
    BUSY,
    FAILED,
    WRONG_KIND,
    /** The node refused an argument of the request. */
    INVALID
  }

  /** A reply as it counts: its token when granted, its failure when one. */
  record Outcome(Counts counts, long token, Optional<NodeFailure> failure) {
    static final Outcome NONE = new Outcome(Counts.NONE, 0, Optional.empty());

    static Outcome of(Counts counts, NodeFailure failure) {
      return new Outcome(counts, 0, Optional.of(failure));
    }
  }

  /**
   * How a reply to an ask counts, given the policy and whether the acquire's deadline had passed
   * when it came.
   */
  static Outcome classify(Reply r, Policy p, boolean pastDeadline) {
    if (r.failure().isEmpty()) {
      return r.token() != 0
          ? new Outcome(Counts.GRANTED, r.token(), Optional.empty())
          : new Outcome(Counts.BUSY, 0, Optional.empty());
    }
    NodeFailure f = r.failure().get();
    if (f.refused() == NodeFailure.Refused.DATABASE) {
      return Outcome.of(Counts.INVALID, f);
    }
    if (isWrongKind(f)) {
      return Outcome.of(Counts.WRONG_KIND, f);
    }
    if (isRefusedArgument(f)) {
      return Outcome.of(Counts.INVALID, f);
    }
    if (f.noReply() && p.queue() && pastDeadline) {
      return new Outcome(Counts.BUSY, 0, Optional.empty());
    }
    return Outcome.of(Counts.FAILED, f);
  }

  /** The node's reply that the resource is held as another kind. */
  static boolean isWrongKind(NodeFailure f) {
    return f.reason().contains("WRONGKIND");
  }

  /**
   * A node's error reply refusing an argument of the request, {@code ERR <argument> must be <what
   * it takes>} as every argument check of the module words it (src/wire/errors.rs; a TTL over the
   * node's dlock.max-ttl-ms, say). Asking again cannot change it.
   */
  static boolean isRefusedArgument(NodeFailure f) {
    return f.reason().startsWith("ERR ") && f.reason().contains(" must be ");
  }
}
