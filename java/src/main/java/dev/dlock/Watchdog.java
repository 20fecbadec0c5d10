package dev.dlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A lease's watchdog (go/lock.go Watch, client/src/lock.rs): extends it every extend interval by
 * the one lease-loss contract ({@link Renewal}, conformance/renewals.json). An extension not
 * confirmed is tried again at shorter pauses until the renew deadline (where the lease is lost:
 * that timer is the lease's own, so a frozen node cannot delay it); one the nodes refuse loses it
 * at once; so does max hold. Its timer only hands each extension to a worker thread.
 */
public final class Watchdog implements AutoCloseable {
  private final Lease lease;
  private final Duration interval;
  private final long holdUntil; // nanoTime; 0: no cap
  private boolean stopped; // guarded by this
  private ScheduledFuture<?> next; // guarded by this

  Watchdog(Lease lease, Duration interval, Optional<Duration> maxHold) {
    this.lease = lease;
    this.interval = interval;
    this.holdUntil = maxHold.map(d -> lease.acquiredAt() + d.toNanos()).orElse(0L);
  }

  void start() {
    lease.watching(true);
    plan(Renewal.Extension.EXTENDED);
  }

  // The next step by the contract; the pause cut at the hold cap.
  private void plan(Renewal.Extension last) {
    long now = System.nanoTime();
    Optional<Duration> pause = Renewal.next(lease.ttl(), interval, Duration.ofNanos(lease.validUntil() - now), last);
    if (pause.isEmpty()) {
      lease.lose(new LockLostException(lease.resource()));
      return;
    }
    long wait = pause.get().toNanos();
    boolean capped = holdUntil != 0 && now + wait - holdUntil >= 0;
    if (capped) {
      wait = Math.max(holdUntil - now, 0);
    }
    synchronized (this) {
      if (stopped || lease.calls.b.timers.isShutdown()) {
        return;
      }
      next = lease.calls.b.timers.schedule(() -> lease.calls.b.workers.execute(() -> step(capped)), wait, TimeUnit.NANOSECONDS);
    }
  }

  private void step(boolean capped) {
    if (over()) {
      return;
    }
    if (capped) {
      lease.lose(new LockLostException(lease.resource())); // max hold passed
      return;
    }
    Renewal.Extension last = lease.extendOnce();
    if (over()) {
      return;
    }
    if (last == Renewal.Extension.REFUSED) {
      lease.lose(new LockLostException(lease.resource()));
      return;
    }
    plan(last);
  }

  private boolean over() {
    synchronized (this) {
      if (stopped) {
        return true;
      }
    }
    return lease.isLost() || lease.isReleased();
  }

  // Stops extending (the lease's release does it before its RELEASE).
  synchronized void halt() {
    stopped = true;
    if (next != null) {
      next.cancel(false);
    }
  }

  /**
   * Stops extending; the lease is then lost at validity's end, not at the renew deadline.
   *
   * @return whether the lease was lost
   */
  public boolean stop() {
    halt();
    lease.watching(false);
    return lease.isLost();
  }

  /** {@link #stop()}. */
  @Override
  public void close() {
    stop();
  }
}
