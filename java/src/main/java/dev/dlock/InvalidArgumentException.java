package dev.dlock;

import dev.dlock.transport.NodeFailure;
/**
 * Bad input, refused before any node was asked (an empty resource name, a TTL that leaves no
 * validity, a wait over ten years, a bad option or URL); or an argument a node refused all the
 * same ({@code ERR ... must be ...}, a database the server does not have), which ends the call at
 * once. Asking again cannot cure it.
 *
 * <p>It extends {@link DlockException}, not {@link IllegalArgumentException}, so that one catch
 * takes every dlock error, as Go's {@code *Error} and Rust's {@code Error} do.
 */
public class InvalidArgumentException extends DlockException {
  private static final long serialVersionUID = 1L;

  /** What was wrong, and with which argument. */
  public InvalidArgumentException(String message) {
    super(message);
  }

  /** {@code node} refused an argument of the request for {@code resource}. */
  static InvalidArgumentException refusedBy(String resource, NodeFailure failure) {
    if (failure.refused() == NodeFailure.Refused.DATABASE) {
      // The database, not the request: the node's own words say which.
      return new InvalidArgumentException("lock " + quote(resource) + ": " + failure);
    }
    return new InvalidArgumentException("lock " + quote(resource) + ": " + failure.node()
        + " refused an argument: " + failure.reason());
  }
}
