package dev.dlock;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Several resources taken at once, all or nothing, each exclusive or shared (Rust's
 * {@code LockSet}, Go's {@code Modes}): what {@link LockManager#tryAcquireAll(ResourceSet,
 * java.time.Duration)} and {@link LockManager#getMultiLock(ResourceSet)} take. It is a type of
 * its own, not a {@code List<Resource>} overload, because Java's erasure would make that clash
 * with the {@code List<String>} forms; and so it is checked once, when made, before anything is
 * sent: 1 to {@link #MAX} resources, none empty or given twice, none a semaphore.
 */
public final class ResourceSet {
  /** The most resources a set takes (the module's limit). */
  public static final int MAX = Sets.MAX_SET;

  private final Sets.Members members;
  private final List<Resource> resources;

  private ResourceSet(List<Resource> resources) {
    if (resources == null || resources.stream().anyMatch(java.util.Objects::isNull)) {
      throw new InvalidArgumentException("a set's resources must be given (none null)");
    }
    this.resources = List.copyOf(resources);
    this.members = Sets.members(this.resources.stream().map(Resource::name).toList(),
        this.resources.stream().map(Resource::kind).toList());
  }

  /**
   * A set of {@code members}, in this order, each {@link Resource#exclusive} or
   * {@link Resource#shared}.
   *
   * @throws InvalidArgumentException none, more than {@link #MAX}, one given twice, or a
   *     semaphore's permit (a set holds none)
   */
  public static ResourceSet of(Resource... members) {
    return new ResourceSet(members == null ? null : Arrays.asList(members));
  }

  /** {@link #of(Resource...)} of a list. */
  public static ResourceSet of(List<Resource> members) {
    return new ResourceSet(members == null ? null : new ArrayList<>(members));
  }

  /** Every one of {@code names} exclusive, in this order. */
  public static ResourceSet exclusive(List<String> names) {
    if (names == null || names.stream().anyMatch(java.util.Objects::isNull)) {
      throw new InvalidArgumentException("a set's resources must be given (none null)");
    }
    return new ResourceSet(names.stream().map(Resource::exclusive).toList());
  }

  /** The resources, in the order given. */
  public List<Resource> resources() {
    return resources;
  }

  /** The resources' names, in the order given. */
  public List<String> names() {
    return members.keys();
  }

  Sets.Members members() {
    return members;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ResourceSet s && resources.equals(s.resources);
  }

  @Override
  public int hashCode() {
    return resources.hashCode();
  }

  @Override
  public String toString() {
    return "ResourceSet" + resources;
  }
}
