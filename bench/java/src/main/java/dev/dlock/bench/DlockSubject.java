package dev.dlock.bench;

import java.time.Duration;
import java.util.List;

import dev.dlock.Lease;
import dev.dlock.LockManager;
import dev.dlock.Options;

/**
 * dlock's Java client (java/) on every node given: a quorum of them, fencing on. Compiled only
 * when the client has {@code LockManager} (bench/java/pom.xml's {@code dlock-client} profile);
 * Main loads it by name. The 500 ms per-node timeout the other dlock contenders get: the
 * benchmark measures speed, not failure detection, on a loaded 2-core machine.
 */
final class DlockSubject implements Subject {
    private final List<String> urls;
    private final Options options = Options.builder().timeout(Duration.ofMillis(500)).build();
    private final LockManager locks;
    /** Whether each lease's token is read (it commits on that first read). */
    private final boolean tokenUsed;
    /** The dying holders' manager (closed without releasing: close does not release). */
    private LockManager holders;

    DlockSubject(List<String> urls, boolean tokenUsed) {
        this.urls = urls;
        this.tokenUsed = tokenUsed;
        this.locks = LockManager.connect(urls, options);
    }

    private Held held(Lease lease, String name) {
        if (lease == null) {
            throw new IllegalStateException(name + ": not acquired");
        }
        if (tokenUsed) {
            Main.sink(lease.token());
        }
        return lease::release;
    }

    @Override
    public Held tryAcquire(String name, long ttlMs) {
        return held(locks.tryAcquire(name, Duration.ofMillis(ttlMs)), name);
    }

    @Override
    public Held acquire(String name, long ttlMs, long waitMs) {
        return held(locks.acquire(name, Duration.ofMillis(ttlMs), Duration.ofMillis(waitMs)), name);
    }

    /**
     * A holder that dies: another manager (another owner) takes the lock and never touches the
     * lease again: a lease from tryAcquire has no watchdog, so nothing extends or releases it.
     * One such manager for every death, connected before the first (its connections are not
     * part of the holder's request).
     */
    @Override
    public long abandon(String name, long ttlMs) {
        synchronized (this) {
            if (holders == null) {
                holders = LockManager.connect(urls, options);
                holders.tryAcquire(name + ":connect", Duration.ofSeconds(10)).release();
            }
        }
        long sent = System.nanoTime();
        holders.tryAcquire(name, Duration.ofMillis(ttlMs));
        return sent;
    }

    @Override
    public void close() {
        locks.close();
        if (holders != null) {
            holders.close();
        }
    }
}
