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

/**
 * The entry point (go/manager.go, client/src/manager.rs): the quorum's nodes and the options.
 * {@link #tryAcquire} and {@link #acquire} hand out a {@link Lease}; {@link #getLock} a
 * {@link DistributedLock}, the {@code java.util.concurrent.locks.Lock} over the same. Every URL
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
    return unchecked(() -> take(resource, ttl, Optional.empty(), false));
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
    return unchecked(() -> take(resource, ttl, Optional.of(wait), false));
  }

  /** {@link #tryAcquire(Resource, Duration)} on a worker thread. */
  public CompletableFuture<Lease> tryAcquireAsync(Resource resource, Duration ttl) {
    return CompletableFuture.supplyAsync(() -> tryAcquire(resource, ttl), b.workers);
  }

  /** {@link #tryAcquire(String, Duration)} on a worker thread. */
  public CompletableFuture<Lease> tryAcquireAsync(String resource, Duration ttl) {
    return tryAcquireAsync(Resource.exclusive(resource), ttl);
  }

  /** {@link #acquire(Resource, Duration, Duration)} on a worker thread (a wait is a parked thread). */
  public CompletableFuture<Lease> acquireAsync(Resource resource, Duration ttl, Duration wait) {
    Checks.checkWait(wait);
    return CompletableFuture.supplyAsync(() -> acquire(resource, ttl, wait), b.workers);
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

  /** What an interruptible call throws, for the ones that are not. */
  interface Take {
    Lease run() throws InterruptedException;
  }

  private static Lease unchecked(Take t) {
    try {
      return t.run();
    } catch (InterruptedException e) {
      throw new IllegalStateException("an uninterruptible wait was interrupted", e); // cannot happen
    }
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
    // commit of its token when fencing is on and there is more than one node.
    boolean owes = Commit.owed(true, b.nodes.size(), b.options.fencing());
    if (wait.isEmpty()) {
      return run(c, whole, Duration.ZERO, Policy.NO_WAIT_UNCOMMITTED, owes, true, interruptible);
    }
    if (!b.queue) {
      return run(c, whole, wait.get(), Policy.NO_WAIT_UNCOMMITTED, owes, false, interruptible);
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

  private Lease run(Calls c, Duration ttl, Duration wait, Policy p, boolean owes, boolean once, boolean interruptible)
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
