package dev.dlock;

/**
 * A node holds the resource as another kind (a lock asked as a semaphore, a semaphore of another
 * limit, ...): never retried.
 */
public class WrongKindException extends DlockException {
  private static final long serialVersionUID = 1L;

  private final String resource;
  private final String node;
  private final String reason;

  /** {@code node} holds {@code resource} as another kind, as its {@code reason} says. */
  public WrongKindException(String resource, String node, String reason) {
    super("lock " + quote(resource) + " is held as another kind on " + node + ": " + reason);
    this.resource = resource;
    this.node = node;
    this.reason = reason;
  }

  /** The resource's name. */
  public String resource() {
    return resource;
  }

  /** The node that said so. */
  public String node() {
    return node;
  }

  /** The node's {@code WRONGKIND} message. */
  public String reason() {
    return reason;
  }
}
