package dev.dlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A {@link Lock} over a dlock lease ({@link LockManager#getLock}, {@link LockManager#getSharedLock},
 * {@link LockManager#getSemaphore}). Its owner is the handle, not the thread: a handle locked on
 * one thread may be unlocked on another, a virtual thread or a future's, so it suits code that
 * hops threads. Make one handle per caller (they are cheap); callers of one manager waiting for
 * one resource share one server-side wait ({@link LocalWaits}).
 *
 * <p>The contract's edges:
 *
 * <ul>
 *   <li>A handle holds once: {@link #lock()} (or a {@code tryLock}) on a handle that holds, or
 *       is being locked by another caller, throws {@link IllegalStateException}. There is no
 *       reentrancy by thread because the owner is the handle: counting holds per thread would
 *       make a lock taken on one thread and released on another ambiguous.
 *   <li>{@link #unlock()} by a handle that does not hold throws
 *       {@link IllegalMonitorStateException}, as {@code ReentrantLock} does.
 *   <li>{@link #unlock()} after the lease was lost releases whatever is left on the nodes, then
 *       throws {@link LockLostException}: the work done under the lock may not have been
 *       exclusive. A lost lease must be unlocked before the handle locks again.
 *   <li>No quorum: {@link #lock()} throws {@link NoQuorumException} (unchecked, naming each node
 *       and why); {@code tryLock} too (it answers false only for a lock held by others).
 *   <li>After {@link #unlock()} a handle can lock again: a new owner, a new token.
 *   <li>{@link #lock()} waits up to the longest wait the nodes take ({@link Checks#MAX_WAIT}, ten
 *       years) and waits again after that, as the other clients do; {@link #tryLock()} is one
 *       attempt that does not wait.
 *   <li>{@link #lock()}, {@link #lockInterruptibly()}, {@link #tryLock()} and
 *       {@link #tryLock(long, TimeUnit)} take a lease of {@link Options#lockTtl()} and keep it
 *       extended by a watchdog while held (every ttl/3, {@link Options#extendInterval}), by the
 *       one lease-loss contract: lost at the renew deadline unless an extension came first; the
 *       lost listeners fire once and {@link #isLost()} turns true. {@link #tryLock(long, long,
 *       TimeUnit)} (Redisson's shape) takes a lease of the given time with no watchdog.
 *   <li>{@link #newCondition()} is refused: a condition would need a distributed wait/notify.
 *   <li>{@link #close()} unlocks if held, so try-with-resources works.
 * </ul>
 */
public final class DistributedLock implements Lock, AutoCloseable {
  private final LockManager manager;
  private final Resource resource;
  private final List<Runnable> lostListeners = new ArrayList<>(); // guarded by this
  private Lease lease; // guarded by this
  private Watchdog watchdog; // guarded by this
  private boolean locking; // a caller is taking it (guarded by this)

  DistributedLock(LockManager manager, Resource resource) {
    this.manager = manager;
    this.resource = resource;
  }

  /** What it locks. */
  public Resource resource() {
    return resource;
  }

  /** Waits as long as it takes (an interrupt is kept, set again on return). */
  @Override
  public void lock() {
    try {
      forever(false);
    } catch (InterruptedException e) {
      throw new IllegalStateException("an uninterruptible wait was interrupted", e); // cannot happen
    }
  }

  /** Waits as long as it takes, or until the thread is interrupted (the wait withdrawn first). */
  @Override
  public void lockInterruptibly() throws InterruptedException {
    forever(true);
  }

  private void forever(boolean interruptible) throws InterruptedException {
    begin();
    try {
      while (true) {
        try {
          held(manager.take(resource, ttl(), Optional.of(Checks.MAX_WAIT), interruptible), true);
          return;
        } catch (LockContendedException e) {
          // Ten years ran out: wait again, as the other clients do.
        }
      }
    } finally {
      done();
    }
  }

  /** One attempt that does not wait: true when held (watched). */
  @Override
  public boolean tryLock() {
    begin();
    try {
      held(manager.tryAcquire(resource, ttl()), true);
      return true;
    } catch (LockContendedException e) {
      return false;
    } finally {
      done();
    }
  }

  /** Waits up to {@code time}: true when held (watched), false when the time ran out. */
  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    return attempt(time, unit, ttl(), true);
  }

  /**
   * Waits up to {@code waitTime} for a lease of {@code leaseTime} with no watchdog (Redisson's
   * shape): it ends with its validity unless {@link #lease()}'s extend is called.
   */
  public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
    return attempt(waitTime, unit, Duration.ofNanos(unit.toNanos(leaseTime)), false);
  }

  private boolean attempt(long time, TimeUnit unit, Duration ttl, boolean watch) throws InterruptedException {
    Duration wait = Duration.ofNanos(unit.toNanos(Math.max(time, 0)));
    Checks.checkWait(wait);
    begin();
    try {
      held(manager.take(resource, ttl, Optional.of(wait), true), watch);
      return true;
    } catch (LockContendedException e) {
      return false;
    } finally {
      done();
    }
  }

  private Duration ttl() {
    return manager.options().lockTtl();
  }

  // A handle holds once, and is taken by one caller at a time.
  private synchronized void begin() {
    if (lease != null) {
      throw new IllegalStateException("lock " + DlockException.quote(resource.name())
          + " is already held by this handle: a handle holds once (its owner is the handle, not the thread); "
          + "unlock it first, or take another handle");
    }
    if (locking) {
      throw new IllegalStateException("lock " + DlockException.quote(resource.name())
          + " is being locked through this handle by another caller: take one handle per caller");
    }
    locking = true;
  }

  private synchronized void done() {
    locking = false;
  }

  private void held(Lease l, boolean watch) {
    List<Runnable> tell;
    synchronized (this) {
      lease = l;
      watchdog = watch ? l.watch() : null;
      tell = List.copyOf(lostListeners);
    }
    for (Runnable r : tell) {
      l.onLost(r);
    }
  }

  /**
   * Releases the lease on every node.
   *
   * @throws IllegalMonitorStateException this handle does not hold it
   * @throws LockLostException the lease had been lost (what was left is released first)
   * @throws NoQuorumException too few nodes answered the release
   */
  @Override
  public void unlock() {
    Lease l;
    Watchdog dog;
    synchronized (this) {
      if (lease == null) {
        throw new IllegalMonitorStateException("lock " + DlockException.quote(resource.name())
            + " is not held by this handle");
      }
      l = lease;
      dog = watchdog;
      lease = null;
      watchdog = null;
    }
    if (dog != null) {
      dog.stop();
    }
    boolean lost = l.isLost();
    l.release();
    if (lost) {
      throw new LockLostException(resource.name());
    }
  }

  /** Refused: a distributed lock has no condition. */
  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException("a DistributedLock has no Condition: waiting and signalling across "
        + "processes is not part of a lock; use a queue, or poll the protected state under the lock");
  }

  /**
   * The held lease's fencing token ({@link Lease#token}: a commit it owes is paid first).
   *
   * @throws IllegalMonitorStateException not held
   */
  public long token() {
    return held().token();
  }

  private synchronized Lease held() {
    if (lease == null) {
      throw new IllegalMonitorStateException("lock " + DlockException.quote(resource.name()) + " is not held by this handle");
    }
    return lease;
  }

  /** Whether the lease held was lost (false when not held). */
  public synchronized boolean isLost() {
    return lease != null && lease.isLost();
  }

  /** Whether this handle holds a lease that is neither lost nor past its validity. */
  public synchronized boolean isHeld() {
    return lease != null && !lease.isLost() && !lease.validity().isZero();
  }

  /** Runs {@code listener} once when a lease this handle holds (now or later) is lost. */
  public void addLostListener(Runnable listener) {
    Lease l;
    synchronized (this) {
      lostListeners.add(listener);
      l = lease;
    }
    if (l != null) {
      l.onLost(listener);
    }
  }

  /** The lease held, if any. */
  public synchronized Optional<Lease> lease() {
    return Optional.ofNullable(lease);
  }

  /** {@link Lease#guarded} of the held lease. */
  public Object guarded(DataConnection data, String gate, String... command) {
    return held().guarded(data, gate, command);
  }

  /** Unlocks if held. */
  @Override
  public void close() {
    boolean holds;
    synchronized (this) {
      holds = lease != null;
    }
    if (holds) {
      unlock();
    }
  }

  @Override
  public String toString() {
    return "DistributedLock[" + resource + ", " + lease().map(Lease::toString).orElse("not held") + "]";
  }
}
