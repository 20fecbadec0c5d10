package dev.dlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A held lock (client/src/lock.rs and lease.rs, go/lock.go and writes.go): its token, owner and
 * validity; {@link #extend}, {@link #release}; the lease-loss contract ({@link Renewal}: lost at
 * the renew deadline while a watchdog keeps it, unless an extension came first; at validity's end
 * unwatched; at once when the nodes refuse an extension, a commit fails, a guarded write is stale
 * or max hold passes); the watchdog ({@link #watch}); and the commit its token may owe, paid when
 * the token is first read ({@link #token}).
 *
 * <p>Its writes of the nodes' TTL go one at a time (go/writes.go): an extension, the watchdog's,
 * the commit and the last release each hold the lease's writes lock from before their requests go
 * out until every node answered, so the nodes keep the TTL the lease believes in. Thread-safe.
 */
public final class Lease {
  final Calls calls;
  private final Duration ttl;
  private final String owner;
  private final long token;
  private final long acquiredAt; // nanoTime
  private final Driver.Signal stale; // raised on release: grants still coming are not the holder's
  private final List<Integer> holding; // the nodes a commit owed goes to; null: nothing owed
  private final Semaphore writes = new Semaphore(1, true);

  private long validUntil; // nanoTime; all guarded by this
  private Duration ttlSet; // the TTL last set on the nodes
  private boolean released;
  private LockLostException lost;
  private boolean watched;
  private ScheduledFuture<?> renewBy; // the renew deadline while watched, else validity's end
  private final List<Runnable> listeners = new ArrayList<>();
  private CompletableFuture<Long> flight; // the one commit, however many readers
  private Watchdog watchdog;

  Lease(Calls calls, Duration ttl, Driver.Granted won, boolean owes) {
    this.calls = calls;
    this.ttl = ttl;
    this.owner = won.owner();
    this.token = won.token();
    this.acquiredAt = System.nanoTime();
    this.stale = won.stale();
    this.holding = owes ? List.copyOf(won.holding()) : null;
    synchronized (this) {
      this.validUntil = won.validUntil();
      this.ttlSet = ttl;
      schedule();
    }
  }

  /** The resource's name. */
  public String resource() {
    return calls.resource;
  }

  /** How it is held: exclusively, shared, or as a semaphore's permit. */
  public Kind kind() {
    return calls.kind;
  }

  /** The owner name the nodes hold it under (random per acquisition). */
  public String owner() {
    return owner;
  }

  /** The TTL it was taken with (the watchdog extends by it). */
  public Duration ttl() {
    return ttl;
  }

  /**
   * The fencing token (unsigned 64 bits: {@link Long#toUnsignedString}): pass it to the protected
   * resource, which must refuse lower ones. A hold taken without waiting on the nodes, with
   * fencing on and more than one node, owes the commit of its token (docs/protocol.md §4.1): the
   * first read pays it, one FENCE round shared by every reader, and the token comes once a quorum
   * committed it.
   *
   * @throws LockLostException the commit failed (the lock is then lost), or the lock was lost or
   *     released before it
   */
  public long token() {
    try {
      return tokenAsync().join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof DlockException d) {
        throw d;
      }
      throw e;
    }
  }

  /**
   * {@link #token()} without blocking: one commit however many readers at once; a failed commit
   * completes it with a {@link LockLostException}.
   */
  public CompletableFuture<Long> tokenAsync() {
    if (holding == null) {
      return CompletableFuture.completedFuture(token);
    }
    synchronized (this) {
      if (flight == null) {
        flight = new CompletableFuture<>();
        calls.b.workers.execute(this::commit);
      }
      return flight.copy(); // a reader's cancel() must not cancel the others' commit
    }
  }

  // Pays what the hold owes: FENCE ... PX ttlSet on the holding nodes. Once committed, the lease
  // counts from the commit round's start; else the lock is lost and the hold is given back.
  private void commit() {
    writes.acquireUninterruptibly();
    CompletableFuture<Void> rest = new CompletableFuture<>();
    boolean handed = false;
    try {
      LockLostException before = unstarted();
      if (before != null) {
        flight.completeExceptionally(before);
        return;
      }
      long started = System.nanoTime();
      Duration ttlNow = nodeTtl();
      boolean committed = calls.commit(owner, token, ttlNow, holding, calls.b.needed(calls.kind), rest).join();
      Optional<Duration> left = calls.b.validity(ttlNow, started);
      LockLostException failed = null;
      if (committed && left.isPresent()) {
        renewed(System.nanoTime() + left.get().toNanos(), ttlNow);
      } else {
        failed = new LockLostException(resource());
        lose(failed);
      }
      handed = true;
      afterCommit(rest, failed != null);
      if (failed != null) {
        flight.completeExceptionally(failed);
      } else {
        flight.complete(token);
      }
    } finally {
      if (!handed) {
        writes.release();
      }
    }
  }

  // The writes lock is held until every FENCE answered (and, when lost, the hold was given back:
  // a FENCE that timed out may still land).
  private void afterCommit(CompletableFuture<Void> rest, boolean lostIt) {
    rest.thenCompose(v -> {
      if (!lostIt) {
        return CompletableFuture.completedFuture(null);
      }
      stale.raise();
      return calls.release(owner, calls.b.everywhere()).thenApply(t -> null);
    }).whenComplete((v, e) -> writes.release());
  }

  // Why a commit cannot start: lost or released already, or validity over (then lost now).
  private LockLostException unstarted() {
    synchronized (this) {
      if (lost != null || released) {
        return new LockLostException(resource());
      }
    }
    if (validity().isZero()) {
      LockLostException why = new LockLostException(resource());
      lose(why);
      return why;
    }
    return null;
  }

  private synchronized Duration nodeTtl() {
    return ttlSet;
  }

  /** The time left before the lock may be held by someone else: zero when over or lost. */
  public synchronized Duration validity() {
    if (lost != null) {
      return Duration.ZERO;
    }
    return Duration.ofNanos(Math.max(validUntil - System.nanoTime(), 0));
  }

  /** Whether the lease was lost (see the class notes); a released lease is not lost. */
  public synchronized boolean isLost() {
    return lost != null;
  }

  /** Whether it was released. */
  public synchronized boolean isReleased() {
    return released;
  }

  /**
   * Runs {@code listener} once when the lease is lost (at once, on another thread, if it is
   * already); never after a release.
   */
  public void onLost(Runnable listener) {
    synchronized (this) {
      if (lost == null) {
        listeners.add(listener);
        return;
      }
    }
    calls.b.workers.execute(listener);
  }

  /** Ends the lease: lost, the listeners told once, the watchdog stopped. */
  void lose(LockLostException why) {
    List<Runnable> tell;
    synchronized (this) {
      if (lost != null || released) {
        return;
      }
      lost = why;
      if (renewBy != null) {
        renewBy.cancel(false);
      }
      tell = new ArrayList<>(listeners);
      listeners.clear();
    }
    for (Runnable r : tell) {
      calls.b.workers.execute(r);
    }
  }

  /** Moves the validity's end to {@code until} (a hold of {@code ttl}), the renew deadline with it. */
  synchronized void renewed(long until, Duration ttlNow) {
    if (lost == null && !released) {
      validUntil = until;
      ttlSet = ttlNow;
      schedule();
    }
  }

  /** A watchdog starts keeping the lease (the renew deadline applies), or stops. */
  synchronized void watching(boolean on) {
    if (lost == null && !released) {
      watched = on;
      schedule();
    }
  }

  // The lease's end: the renew deadline while watched, else validity's end.
  private void schedule() {
    if (renewBy != null) {
      renewBy.cancel(false);
    }
    Duration in = Renewal.endIn(Duration.ofNanos(validUntil - System.nanoTime()), ttlSet, watched);
    if (calls.b.timers.isShutdown()) {
      return; // the manager is closed: no deadline is kept any more (docs: close does not release)
    }
    renewBy = calls.b.timers.schedule(() -> lose(new LockLostException(resource())),
        Math.max(in.toNanos(), 0), TimeUnit.NANOSECONDS);
  }

  synchronized long validUntil() {
    return validUntil;
  }

  long acquiredAt() {
    return acquiredAt;
  }

  /**
   * Resets the TTL on every node to {@code ttl}; the lease counts from this extension.
   *
   * @throws NoQuorumException too few nodes answered (the lease keeps its earlier deadline)
   * @throws LockLostException a quorum answered and did not extend it, or not within the new
   *     validity; or it was lost or released before
   */
  public void extend(Duration ttl) {
    Checks.checkLease(ttl, calls.b.options.drift());
    Duration whole = Duration.ofMillis(ttl.toMillis());
    writes.acquireUninterruptibly();
    try {
      if (isLost() || isReleased()) {
        throw new LockLostException(resource());
      }
      Calls.Extended e = calls.extend(owner, whole).join();
      if (!e.ok()) {
        throw failed(e.tally());
      }
      renewed(e.validUntil(), whole);
    } finally {
      writes.release();
    }
  }

  /** {@link #extend(Duration)} by the TTL it was taken with. */
  public void extend() {
    extend(ttl);
  }

  // No quorum when too few nodes answered to know, else lost.
  private DlockException failed(Calls.Tally t) {
    int needed = calls.b.needed(calls.kind);
    if (t.answered() < needed && !t.unreachable().isEmpty()) {
      return new NoQuorumException(resource(), needed, t.unreachable());
    }
    return new LockLostException(resource());
  }

  /** One extension, for the watchdog: how it went. */
  Renewal.Extension extendOnce() {
    writes.acquireUninterruptibly();
    try {
      if (isLost() || isReleased()) {
        return Renewal.Extension.UNCONFIRMED;
      }
      Calls.Extended e = calls.extend(owner, ttl).join();
      if (e.ok()) {
        renewed(e.validUntil(), ttl);
        return Renewal.Extension.EXTENDED;
      }
      return calls.outcome(e.tally());
    } finally {
      writes.release();
    }
  }

  /**
   * Gives the lock back on every node (and stops its watchdog); releasing a released lease does
   * nothing. It goes out whatever the lease's state: a lost lease may still be held on some nodes.
   *
   * @throws NoQuorumException too few nodes answered (the lock lingers there until its TTL)
   */
  public void release() {
    Watchdog dog;
    synchronized (this) {
      if (released) {
        return;
      }
      released = true;
      if (renewBy != null) {
        renewBy.cancel(false);
      }
      dog = watchdog;
      listeners.clear();
    }
    stale.raise();
    if (dog != null) {
      dog.halt();
    }
    // No write of the TTL follows the RELEASE: one still out ends first.
    writes.acquireUninterruptibly();
    Calls.Tally t;
    try {
      t = calls.release(owner, calls.b.everywhere()).join();
    } finally {
      writes.release();
    }
    int needed = Timing.majority(calls.b.nodes.size());
    if (t.answered() < needed) {
      throw new NoQuorumException(resource(), needed, t.unreachable());
    }
  }

  /**
   * Starts the watchdog: the lease extended every extend interval (default a third of the TTL)
   * by the lease-loss contract, until stopped, released, lost or max hold. Watching twice gives
   * the running one.
   */
  public Watchdog watch() {
    synchronized (this) {
      if (watchdog == null) {
        watchdog = new Watchdog(this, calls.b.options.extendInterval(ttl), calls.b.options.maxHold());
      } else {
        return watchdog;
      }
    }
    watchdog.start();
    return watchdog;
  }

  /**
   * Runs {@code command} on {@code data} only if this lease's token is still current at the key
   * {@code gate} (DLOCK.GUARD, docs/fencing.md): its reply. The token is read as {@link #token}
   * reads it.
   *
   * @throws StaleTokenException a newer holder wrote through the gate: nothing changed, the lease
   *     is lost
   * @throws LockLostException the lease was lost already: nothing is sent
   */
  public Object guarded(DataConnection data, String gate, String... command) {
    return Guarded.run(this, data, gate, List.of(command));
  }

  /** The lease as a log line shows it: the token only once it may leave the client. */
  @Override
  public String toString() {
    boolean committed;
    synchronized (this) {
      committed = holding == null || (flight != null && flight.isDone() && !flight.isCompletedExceptionally());
    }
    return "Lease[resource=" + DlockException.quote(resource()) + ", kind=" + kind() + ", owner=" + owner
        + ", token=" + (committed ? Long.toUnsignedString(token) : "(uncommitted)") + ", validity=" + validity() + "]";
  }
}
