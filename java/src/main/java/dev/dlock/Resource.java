package dev.dlock;

import java.util.Objects;

/**
 * What to lock and how: a resource's name and its kind (exclusive, shared, or a semaphore's
 * permit). A plain String given to a {@link LockManager} call is {@link #exclusive}.
 */
public final class Resource {
  private final String name;
  private final Kind kind;

  private Resource(String name, Kind kind) {
    this.name = name;
    this.kind = kind;
  }

  /** {@code name}, held by one owner at a time. */
  public static Resource exclusive(String name) {
    return new Resource(name, Kind.EXCLUSIVE);
  }

  /** {@code name}'s shared side: any number of holders at once, none beside an exclusive one. */
  public static Resource shared(String name) {
    return new Resource(name, Kind.SHARED);
  }

  /** One of {@code limit} permits of the semaphore {@code name} (1 to {@link Kind#MAX_LIMIT}). */
  public static Resource semaphore(String name, int limit) {
    return new Resource(name, Kind.semaphore(limit));
  }

  /** The resource's name. */
  public String name() {
    return name;
  }

  /** How it is held. */
  public Kind kind() {
    return kind;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Resource r && Objects.equals(name, r.name) && kind.equals(r.kind);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, kind);
  }

  @Override
  public String toString() {
    return DlockException.quote(String.valueOf(name)) + " (" + kind + ")";
  }
}
