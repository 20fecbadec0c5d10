package dev.dlock;

/** A quorum granted, but no validity was left (slow nodes, a tiny TTL): released at once. */
public class ValidityExpiredException extends DlockException {
  private static final long serialVersionUID = 1L;

  private final String resource;

  /** The lock {@code resource}, granted too late. */
  public ValidityExpiredException(String resource) {
    super("lock " + quote(resource) + " was granted, but its validity ran out while acquiring: give a longer TTL");
    this.resource = resource;
  }

  /** The resource's name. */
  public String resource() {
    return resource;
  }
}
