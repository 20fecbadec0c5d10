package dev.dlock;

/**
 * The lock is no longer held on a quorum: an extension failed, validity ran out, max hold passed,
 * or the commit its token owed missed the quorum. Stop using its token.
 */
public class LockLostException extends DlockException {
  private static final long serialVersionUID = 1L;

  private final String resource;

  /** The lock {@code resource}, lost. */
  public LockLostException(String resource) {
    this(resource, "lock " + quote(resource) + " was lost (no longer held on a majority): stop using its token");
  }

  /** For subclasses that say more. */
  protected LockLostException(String resource, String message) {
    super(message);
    this.resource = resource;
  }

  /** The resource's name. */
  public String resource() {
    return resource;
  }
}
