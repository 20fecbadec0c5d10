package dev.dlock;

import dev.dlock.transport.NodeFailure;
import java.util.List;
import java.util.Optional;

/**
 * Why one attempt failed (go/attempt.go {@code attemptError}): the driver retries or turns it
 * into the caller's exception ({@link #toException}).
 *
 * @param kind what failed
 * @param failures the failed nodes and why (for no quorum; the refusing node first for wrong
 *     kind and invalid argument)
 * @param isFinal nodes refused for the call (a refusal waiting cannot cure) left a quorum out of
 *     reach: no other attempt
 * @param raised an exception already made (the driver's: two nodes reaching one server, say),
 *     handed to the caller as it is
 */
record AttemptError(Kind kind, List<NodeFailure> failures, boolean isFinal, Optional<DlockException> raised) {
  /** What failed. */
  enum Kind { CONTENDED, NO_QUORUM, WRONG_KIND, INVALID_ARGUMENT, VALIDITY_EXPIRED }

  AttemptError {
    failures = List.copyOf(failures);
  }

  static AttemptError of(Kind kind) {
    return new AttemptError(kind, List.of(), false, Optional.empty());
  }

  static AttemptError of(Kind kind, List<NodeFailure> failures) {
    return new AttemptError(kind, failures, false, Optional.empty());
  }

  /** An error already made, its kind for anotherAttempt's sake. */
  static AttemptError raised(Kind kind, DlockException e) {
    return new AttemptError(kind, List.of(), false, Optional.of(e));
  }

  /**
   * The caller's exception for a lock on {@code resource} ({@code needed} nodes for a quorum)
   * after {@code attempts} attempts (go/manager.go {@code toError}).
   */
  DlockException toException(String resource, int needed, int attempts) {
    if (raised.isPresent()) {
      return raised.get();
    }
    switch (kind) {
      case CONTENDED:
        return new LockContendedException(resource, attempts);
      case NO_QUORUM:
        return new NoQuorumException(resource, needed, failures);
      case VALIDITY_EXPIRED:
        return new ValidityExpiredException(resource);
      default:
        break;
    }
    // Wrong kind and invalid argument always carry the node that said so (Attempt.onReply).
    NodeFailure f = failures.isEmpty() ? NodeFailure.of("a node", "no reason given") : failures.get(0);
    if (kind == Kind.WRONG_KIND) {
      return new WrongKindException(resource, f.node(), f.reason());
    }
    return InvalidArgumentException.refusedBy(resource, f);
  }
}
