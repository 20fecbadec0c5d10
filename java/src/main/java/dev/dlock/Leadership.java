package dev.dlock;

import java.time.Duration;

/**
 * An election won by {@link LockManager#campaign} (go/election.go's Leadership,
 * docs/election.md): its epoch, its value, and the one lease-loss contract of every held lock
 * ({@link #onLost}, {@link #isLost}). A watchdog keeps it, extending every ttl / 3; it is lost at
 * the renew deadline without a confirmed extension, or at once when the nodes refuse one.
 * {@link #resign} (or {@link #close}) hands it to the next candidate at once. Thread-safe.
 */
public final class Leadership implements AutoCloseable {
  private final Lease lease;
  private final String id;
  private String value; // guarded by this: one proclaim at a time

  Leadership(Lease lease, String value) {
    this.lease = lease;
    this.id = ElectionRule.splitOwner(lease.owner())[0];
    this.value = value;
  }

  /** The election's name. */
  public String name() {
    return lease.resource();
  }

  /** The candidate id observers see with the value (unique per campaign). */
  public String id() {
    return id;
  }

  /** The value observers read: the one campaigned with, or last proclaimed. */
  public synchronized String value() {
    return value;
  }

  /**
   * This leadership's fencing token (unsigned 64 bits), larger than every earlier leader's: pass
   * it to guarded writes so that a deposed leader's are refused. Committed on a majority before
   * the campaign returned, so reading it sends nothing.
   */
  public long epoch() {
    return lease.token();
  }

  /** The time left before someone else may lead: zero once lost. */
  public Duration validity() {
    return lease.validity();
  }

  /** Whether leadership was lost (a resigned leadership is not lost). */
  public boolean isLost() {
    return lease.isLost();
  }

  /**
   * Runs {@code listener} once when leadership is lost (at once, on another thread, if it is
   * already); never after {@link #resign}. Stop the work done as leader there.
   */
  public void onLost(Runnable listener) {
    lease.onLost(listener);
  }

  /**
   * The lease leadership is held under: its guarded writes ({@link Lease#guarded}) carry the
   * epoch as their token.
   */
  public Lease lease() {
    return lease;
  }

  /**
   * Changes the value observers read, keeping leadership and epoch (DLOCK.PROCLAIM on every
   * node; a majority must take it, else the nodes that did are turned back).
   *
   * @throws InvalidArgumentException a value over 200 bytes, before any node is asked
   * @throws NoQuorumException too few nodes answered (observers read the old value)
   * @throws LockLostException leadership was lost or resigned, or not held on a majority
   */
  public synchronized void proclaim(String newValue) {
    String v = newValue == null ? "" : newValue;
    ElectionRule.checkValue(v);
    lease.rename(v.isEmpty() ? id : id + " " + v);
    value = v;
  }

  /**
   * Gives leadership up: the watchdog stops before the release is sent (no extension follows it),
   * and the next candidate queued on the nodes is granted at once. Resigning twice does nothing.
   *
   * @throws NoQuorumException too few nodes answered (the lease lingers there until its TTL)
   */
  public synchronized void resign() {
    lease.release();
  }

  /** {@link #resign()}. */
  @Override
  public void close() {
    resign();
  }

  @Override
  public String toString() {
    return "Leadership[name=" + DlockException.quote(name()) + ", id=" + id + ", value=" + value()
        + ", epoch=" + Long.toUnsignedString(epoch()) + ", lost=" + isLost() + "]";
  }
}
