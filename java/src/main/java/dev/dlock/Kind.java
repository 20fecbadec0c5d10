package dev.dlock;

import java.util.List;

/**
 * How a resource is held: exclusively (the default), shared (a reader's hold), or as one permit
 * of a semaphore of {@link #limit()} permits (client/src/kind.rs, go/kind.go).
 */
public final class Kind {
  /** The largest semaphore limit the module accepts. */
  public static final int MAX_LIMIT = 10000;

  /** The plain lock: one holder at a time. */
  public static final Kind EXCLUSIVE = new Kind(false, 0);

  /** A reader's hold: any number at once, none beside an exclusive holder. */
  public static final Kind SHARED = new Kind(true, 0);

  private final boolean shared;
  private final int limit;

  private Kind(boolean shared, int limit) {
    this.shared = shared;
    this.limit = limit;
  }

  /**
   * One permit of a semaphore of {@code limit} permits.
   *
   * @throws InvalidArgumentException unless the limit is from 1 to {@link #MAX_LIMIT}
   */
  public static Kind semaphore(int limit) {
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new InvalidArgumentException(
          "a semaphore limit must be from 1 to " + MAX_LIMIT + ", got " + limit);
    }
    return new Kind(false, limit);
  }

  /** Tells a reader's hold. */
  public boolean isShared() {
    return shared;
  }

  /** A semaphore's limit, 0 for the other kinds. */
  public int limit() {
    return limit;
  }

  /**
   * The number of {@code nodes} that must grant, commit and extend a hold of this kind: a
   * majority, or a semaphore's larger quorum (docs/shared.md).
   */
  public int quorum(int nodes) {
    return limit > 0 ? Timing.semaphoreQuorum(nodes, limit) : Timing.majority(nodes);
  }

  /** The ACQUIRE option naming the kind, last on every ACQUIRE of an acquisition. */
  List<String> args() {
    if (shared) {
      return List.of("SHARED");
    }
    if (limit > 0) {
      return List.of("LIMIT", Integer.toString(limit));
    }
    return List.of();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Kind k && k.shared == shared && k.limit == limit;
  }

  @Override
  public int hashCode() {
    return Boolean.hashCode(shared) * 31 + limit;
  }

  @Override
  public String toString() {
    if (shared) {
      return "shared";
    }
    return limit > 0 ? "semaphore(" + limit + ")" : "exclusive";
  }
}
