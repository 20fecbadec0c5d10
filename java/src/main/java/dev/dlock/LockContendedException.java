package dev.dlock;

/** Held by another owner on a quorum until the wait ran out (or at once, without a wait). */
public class LockContendedException extends DlockException {
  private static final long serialVersionUID = 1L;

  private final String resource;
  private final int attempts;

  /** The lock {@code resource}, contended after {@code attempts} attempts. */
  public LockContendedException(String resource, int attempts) {
    super("lock " + quote(resource) + " is held by another owner (" + count(attempts, "attempt") + ")");
    this.resource = resource;
    this.attempts = attempts;
  }

  /** The resource's name. */
  public String resource() {
    return resource;
  }

  /** Attempts made (in queue mode usually 1: the wait happens on the nodes). */
  public int attempts() {
    return attempts;
  }
}
