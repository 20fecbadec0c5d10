package dev.dlock;

/** The lock manager was closed: no call reaches the nodes any more. */
public class ManagerClosedException extends DlockException {
  private static final long serialVersionUID = 1L;

  /** A call about {@code resource} after the manager closed. */
  public ManagerClosedException(String resource) {
    super("lock " + quote(resource) + ": the lock manager is closed");
  }
}
