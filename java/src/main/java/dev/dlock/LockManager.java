package dev.dlock;

import dev.dlock.Replies.Policy;
import dev.dlock.transport.BadUrlException;
import dev.dlock.transport.Config;
import dev.dlock.transport.Connect;
import dev.dlock.transport.Identity;
import dev.dlock.transport.Node;
import dev.dlock.transport.Registry;
import dev.dlock.transport.Url;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The entry point (go/manager.go, client/src/manager.rs): the quorum's nodes and the options.
 * {@link #tryAcquire} and {@link #acquire} hand out a {@link Lease}; {@link #getLock} a
 * {@link DistributedLock}, the {@code java.util.concurrent.locks.Lock} over the same;
 * {@link #tryAcquireAll} and {@link #acquireAll} several resources at once. Every URL
 * and option is checked when the manager is made; nothing connects until the first lock.
 *
 * <p>Waiting ({@link #acquire}) queues on the nodes with one ticket (docs/protocol.md §5), and a
 * manager keeps at most one server-side wait per resource: its other callers for that resource
 * queue in the process, first come first served ({@link LocalWaits}, docs/waiting.md). Thread-safe;
 * {@link #close} stops watchdogs and closes connections, releasing nothing.
 */
public final class LockManager implements AutoCloseable {
  private final Backend b;

  private LockManager(Backend b) {
    this.b = b;
  }

  /** A manager over node URLs (docs/connecting.md) with the default options. */
  public static LockManager connect(List<String> urls) {
    return connect(urls, Options.defaults());
  }

  /**
   * A manager over node URLs: redis://, rediss://, unix://, redis+cluster://, redis+sentinel://
   * (and rediss+ for both).
   *
   * @throws InvalidArgumentException no URL, a bad one, one given twice, or unreadable TLS files
   */
  public static LockManager connect(List<String> urls, Options options) {
    if (urls == null || urls.isEmpty()) {
      throw new InvalidArgumentException("no node URLs: a lock needs at least one node");
    }
    List<Url> parsed = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (String raw : urls) {
      Url u;
      try {
        u = Url.parse(raw);
      } catch (BadUrlException e) {
        throw new InvalidArgumentException(e.getMessage());
      }
      // Different texts can reach one server too: transport/Identity checks what each reaches.
      if (!seen.add(u.name())) {
        throw new InvalidArgumentException("node " + u.name() + " is given twice: list each server once");
      }
      parsed.add(u);
    }
    Connect connect = new Connect(config(options));
    Registry registry = new Registry(parsed.stream().map(Url::name).toList());
    List<Node> nodes = new ArrayList<>();
    for (int i = 0; i < parsed.size(); i++) {
      nodes.add(Node.open(parsed.get(i), connect, new Identity(registry, i)));
    }
    return new LockManager(new Backend(nodes, registry, options, connect));
  }

  // The transport's config: the timeout, TLS files and logins (checked now, as every client does).
  private static Config config(Options o) {
    Config c = Config.of(o.timeout());
    if (o.tls().isPresent()) {
      Options.TlsFiles f = o.tls().get();
      Config.TlsFiles files = new Config.TlsFiles(f.ca().orElse(null), f.cert().orElse(null), f.key().orElse(null));
      try {
        c = c.withTls(files.check());
      } catch (IllegalArgumentException e) {
        throw new InvalidArgumentException(e.getMessage());
      }
    }
    if (o.login().isPresent()) {
      c = c.withCredentials(o.login().get().user(), o.login().get().password());
    }
    if (o.sentinelLogin().isPresent()) {
      c = c.withSentinelCredentials(o.sentinelLogin().get().user(), o.sentinelLogin().get().password());
    }
    return c;
  }

  /**
   * A manager as the CLI reads its environment: DLOCK_NODES (URLs separated by commas, split only
   * where a new {@code scheme://} starts, so a sentinel URL keeps its commas), and the logins and
   * TLS files of {@link Options.Builder#fromEnv}.
   */
  public static LockManager fromEnv() {
    return fromEnv(System.getenv());
  }

  static LockManager fromEnv(Map<String, String> env) {
    String nodes = env.getOrDefault("DLOCK_NODES", "");
    if (nodes.isBlank()) {
      throw new InvalidArgumentException("DLOCK_NODES is not set: give the nodes' URLs, separated by commas");
    }
    return connect(splitNodes(nodes), Options.builder().fromEnv(env).build());
  }

  /** DLOCK_NODES split where a new {@code scheme://} starts (the CLI's rule). */
  static List<String> splitNodes(String list) {
    List<String> out = new ArrayList<>();
    for (String part : list.split(",")) {
      String p = part.trim();
      if (p.isEmpty()) {
        continue;
      }
      if (out.isEmpty() || p.contains("://")) {
        out.add(p);
      } else {
        out.set(out.size() - 1, out.get(out.size() - 1) + "," + p); // a sentinel's next address
      }
    }
    return out;
  }

  /** The nodes' names, as errors name them (passwords hidden). */
  public List<String> nodes() {
    return b.nodes.stream().map(Node::name).toList();
  }

  /** The options. */
  public Options options() {
    return b.options;
  }

  /** One attempt at {@code resource} (exclusive) for {@code ttl}, not waiting: the lease. */
  public Lease tryAcquire(String resource, Duration ttl) {
    return tryAcquire(Resource.exclusive(resource), ttl);
  }

  /**
   * One attempt that does not wait on the nodes. With fencing on and more than one node, its
   * token is committed when first read ({@link Lease#token}).
   *
   * @throws LockContendedException held by another owner
   * @throws NoQuorumException too few nodes answered, naming each and why
   * @throws WrongKindException held as another kind
   * @throws InvalidArgumentException bad input (nothing sent) or an argument a node refused
   */
  public Lease tryAcquire(Resource resource, Duration ttl) {
    return Async.unchecked(() -> take(resource, ttl, Optional.empty(), false));
  }

  /** {@link #acquire(Resource, Duration, Duration)} of an exclusive lock. */
  public Lease acquire(String resource, Duration ttl, Duration wait) {
    return acquire(Resource.exclusive(resource), ttl, wait);
  }

  /**
   * Waits up to {@code wait} for {@code resource}: queued on the nodes in ticket order (or
   * retrying, {@link Options.WaitMode#RETRY}). An interrupt does not end the wait (it is set again
   * on return); {@link DistributedLock#lockInterruptibly} does.
   *
   * @throws LockContendedException still held by others when the wait ran out
   */
  public Lease acquire(Resource resource, Duration ttl, Duration wait) {
    Checks.checkWait(wait);
    return Async.unchecked(() -> take(resource, ttl, Optional.of(wait), false));
  }

  /** {@link #tryAcquire(Resource, Duration)} on a worker thread (a lease won once cancelled is given back). */
  public CompletableFuture<Lease> tryAcquireAsync(Resource resource, Duration ttl) {
    return Async.take(b, resource == null ? "" : resource.name(), () -> take(resource, ttl, Optional.empty(), true));
  }

  /** {@link #tryAcquire(String, Duration)} on a worker thread. */
  public CompletableFuture<Lease> tryAcquireAsync(String resource, Duration ttl) {
    return tryAcquireAsync(Resource.exclusive(resource), ttl);
  }

  /**
   * {@link #acquire(Resource, Duration, Duration)} on a worker thread (a wait is a parked thread).
   * Cancelling the future withdraws the wait, on the nodes and in the process's queue, and a
   * lease won as it was cancelled is given back ({@link Async}).
   */
  public CompletableFuture<Lease> acquireAsync(Resource resource, Duration ttl, Duration wait) {
    Checks.checkWait(wait);
    return Async.take(b, resource == null ? "" : resource.name(), () -> take(resource, ttl, Optional.of(wait), true));
  }

  /** {@link #acquire(String, Duration, Duration)} on a worker thread. */
  public CompletableFuture<Lease> acquireAsync(String resource, Duration ttl, Duration wait) {
    return acquireAsync(Resource.exclusive(resource), ttl, wait);
  }

  /** A {@link DistributedLock} handle on {@code name}, exclusive. Handles are cheap: one per caller. */
  public DistributedLock getLock(String name) {
    return new DistributedLock(this, Resource.exclusive(name));
  }

  /** A handle on {@code name}'s shared side. */
  public DistributedLock getSharedLock(String name) {
    return new DistributedLock(this, Resource.shared(name));
  }

  /** A handle on one of {@code limit} permits of the semaphore {@code name}. */
  public DistributedLock getSemaphore(String name, int limit) {
    return new DistributedLock(this, Resource.semaphore(name, limit));
  }

  /** {@link #tryAcquireAll(ResourceSet, Duration)} of {@code resources}, every one exclusive. */
  public Lease tryAcquireAll(List<String> resources, Duration ttl) {
    return tryAcquireAll(ResourceSet.exclusive(resources), ttl);
  }

  /**
   * One attempt at every resource of {@code set}, all or nothing, under one lease and one token
   * (docs/multi.md): each node holds every resource or none (DLOCK.ACQUIREALL), so the set is one
   * lock to the quorum, the commit on first read, the watchdog and the lease-loss contract; a
   * member lost on the nodes loses the set. With a Redis Cluster node, resources of several
   * slots are taken one slot group after another and held as one lease ({@link Lease#tokens}: a
   * token per group); a group that fails gives back those held and its error is the call's.
   *
   * @throws LockContendedException a member is held by another owner: nothing of the set is held
   */
  public Lease tryAcquireAll(ResourceSet set, Duration ttl) {
    return Async.unchecked(() -> Across.take(this, set, ttl, Optional.empty(), false));
  }

  /** {@link #acquireAll(ResourceSet, Duration, Duration)} of {@code resources}, every one exclusive. */
  public Lease acquireAll(List<String> resources, Duration ttl, Duration wait) {
    return acquireAll(ResourceSet.exclusive(resources), ttl, wait);
  }

  /**
   * Waits up to {@code wait} for every resource of {@code set}: queued on all of them at once on
   * each node, holding none meanwhile, so sets asked in any order cannot deadlock. A set always
   * waits on the nodes (no queue in the process, unlike one resource: docs/waiting.md).
   */
  public Lease acquireAll(ResourceSet set, Duration ttl, Duration wait) {
    Checks.checkWait(wait);
    return Async.unchecked(() -> Across.take(this, set, ttl, Optional.of(wait), false));
  }

  /** {@link #tryAcquireAll(ResourceSet, Duration)} on a worker thread (cancel: as {@link #acquireAsync}). */
  public CompletableFuture<Lease> tryAcquireAllAsync(ResourceSet set, Duration ttl) {
    return Async.take(b, String.valueOf(set), () -> Across.take(this, set, ttl, Optional.empty(), true));
  }

  /** {@link #tryAcquireAll(List, Duration)} on a worker thread. */
  public CompletableFuture<Lease> tryAcquireAllAsync(List<String> resources, Duration ttl) {
    return Async.take(b, String.valueOf(resources), () -> Across.take(this, ResourceSet.exclusive(resources), ttl, Optional.empty(), true));
  }

  /** {@link #acquireAll(ResourceSet, Duration, Duration)} on a worker thread (cancel: as {@link #acquireAsync}). */
  public CompletableFuture<Lease> acquireAllAsync(ResourceSet set, Duration ttl, Duration wait) {
    Checks.checkWait(wait);
    return Async.take(b, String.valueOf(set), () -> Across.take(this, set, ttl, Optional.of(wait), true));
  }

  /** {@link #acquireAll(List, Duration, Duration)} on a worker thread. */
  public CompletableFuture<Lease> acquireAllAsync(List<String> resources, Duration ttl, Duration wait) {
    Checks.checkWait(wait);
    return Async.take(b, String.valueOf(resources), () -> Across.take(this, ResourceSet.exclusive(resources), ttl, Optional.of(wait), true));
  }

  /**
   * A {@link DistributedLock} over {@code resources} (Redisson's name), every one exclusive: it
   * locks all of them or none ({@link #acquireAll}), with the single handle's contract.
   *
   * @throws InvalidArgumentException none, more than {@link ResourceSet#MAX}, or one given twice
   */
  public DistributedLock getMultiLock(String... resources) {
    return getMultiLock(ResourceSet.exclusive(resources == null ? null : java.util.Arrays.asList(resources)));
  }

  /** A {@link DistributedLock} over {@code set}, each resource in its mode. */
  public DistributedLock getMultiLock(ResourceSet set) {
    if (set == null) {
      throw new InvalidArgumentException("the set must be given");
    }
    return new DistributedLock(this, set);
  }

  /**
   * A connection to the data's Redis (with the module) for guarded writes, over this manager's
   * TLS files and login; close it when done (the manager's close does not).
   */
  public DataConnection data(String url) {
    Url u;
    try {
      u = Url.parse(url);
    } catch (BadUrlException e) {
      throw new InvalidArgumentException(e.getMessage());
    }
    return new DataConnection(Node.open(u, b.connect(), null), b.options.timeout());
  }

  // Leader election (docs/election.md): Election, Leadership, ElectionWatch, ElectionObserver.

  /**
   * Campaigns to lead {@code name} with {@code value} (at most 200 bytes: an address, an id):
   * queued fairly on the nodes as long as others lead, then a {@link Leadership} kept by a
   * watchdog every ttl / 3, its epoch committed on a majority.
   *
   * @throws InterruptedException interrupted while campaigning (the place in the queue withdrawn)
   * @throws NoQuorumException too few nodes answered
   * @throws WrongKindException the name is held shared or as a semaphore
   */
  public Leadership campaign(String name, String value, Duration ttl) throws InterruptedException {
    return Election.campaign(b, name, value, ttl);
  }

  /** {@link #campaign} on a worker thread; cancelling the future stops campaigning. */
  public CompletableFuture<Leadership> campaignAsync(String name, String value, Duration ttl) {
    return Election.campaignAsync(b, name, value, ttl);
  }

  /** Who leads {@code name} now (empty: nobody); {@link NoQuorumException} when too few nodes answer. */
  public Optional<Leader> leader(String name) {
    return Election.leader(b, name);
  }

  /** Follows who leads {@code name}: the leader first, then every change ({@link ElectionObserver#next}). */
  public ElectionObserver observe(String name) {
    Election.check(b, name, "");
    return new ElectionObserver(b, name);
  }

  /** {@link #observe(String)}, every change handed to {@code listener} in order on one thread until closed. */
  public ElectionObserver observe(String name, Consumer<ElectionObserver.Change> listener) {
    ElectionObserver o = observe(name);
    o.listen(b, listener);
    return o;
  }

  /**
   * Takes {@code r}: one attempt without {@code wait}; with one, queued (one server-side wait per
   * resource per manager, the other callers queued here) or retrying.
   */
  Lease take(Resource r, Duration ttl, Optional<Duration> wait, boolean interruptible) throws InterruptedException {
    if (r == null) {
      throw new InvalidArgumentException("the resource must be given");
    }
    Checks.checkName(r.name());
    Checks.checkLease(ttl, b.options.drift());
    if (b.isClosed()) {
      throw new ManagerClosedException(r.name());
    }
    Duration whole = Duration.ofMillis(ttl.toMillis());
    Calls c = new Calls(b, r.name(), r.kind(), Optional.empty());
    // Without a wait (or retrying), attempts that do not wait on the nodes: their hold owes the
    // commit of its token when fencing is on and there is more than one node. A zero wait is one
    // such attempt too: queued, a first call slowed by its connection's setup past the deadline
    // would be told as the wait's end, contention, where no node said the lock is held.
    boolean owes = Commit.owed(true, b.nodes.size(), b.options.fencing());
    if (wait.isEmpty() || wait.get().isZero()) {
      return run(c, whole, Duration.ZERO, Policy.NO_WAIT_UNCOMMITTED, owes, true, interruptible);
    }
    if (!b.queue) {
      return run(c, whole, wait.get(), Policy.NO_WAIT_UNCOMMITTED, owes, false, interruptible);
    }
    if (!r.kind().equals(Kind.EXCLUSIVE)) { // a shared hold and a permit wait on the nodes each: granted together
      return run(c, whole, wait.get(), Policy.QUEUE, false, false, interruptible);
    }
    long deadline = System.nanoTime() + wait.get().toNanos();
    Optional<LocalWaits.Turn> turn = b.localWaits.turn(r.name(), wait.get(), interruptible);
    if (turn.isEmpty()) {
      // The wait ran out while queued in the process: one try, answered as a wait that ran out.
      return run(c, whole, Duration.ZERO, Policy.NO_WAIT_UNCOMMITTED, owes, true, interruptible);
    }
    // The turn covers the wait, never the hold: handed on as soon as this call answers.
    try {
      Duration left = Duration.ofNanos(Math.max(deadline - System.nanoTime(), 0));
      return run(c, whole, left, Policy.QUEUE, false, false, interruptible);
    } finally {
      turn.get().close();
    }
  }

  Lease run(Calls c, Duration ttl, Duration wait, Policy p, boolean owes, boolean once, boolean interruptible)
      throws InterruptedException {
    Driver.Outcome o = new Driver(c, ttl, wait, p, interruptible).run(once);
    if (o.won() != null) {
      return new Lease(c, ttl, o.won(), owes);
    }
    if (o.interrupted()) {
      throw new InterruptedException("waiting for lock " + DlockException.quote(c.resource) + " was interrupted");
    }
    throw o.failure().toException(c.resource, b.needed(c.kind), o.attempts());
  }

  Backend backend() {
    return b;
  }

  /** Stops the watchdogs' timers and closes every connection; releases nothing (locks end by TTL). */
  @Override
  public void close() {
    b.close();
  }
}
