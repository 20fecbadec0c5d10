package dev.dlock.bench;

import java.util.List;

/**
 * One contender of the Java harness: dlock's Java client or one of Redisson's locks. Every call
 * blocks; a lock is released on the thread that took it (Redisson's owner is the thread).
 */
interface Subject extends AutoCloseable {
    /** A lock held: given back by {@link #release()}. */
    interface Held {
        void release() throws Exception;
    }

    /** Takes {@code name} at once for {@code ttlMs}, or throws when it is held. */
    Held tryAcquire(String name, long ttlMs) throws Exception;

    /** Waits up to {@code waitMs} for {@code name}, then holds it for {@code ttlMs}. */
    Held acquire(String name, long ttlMs, long waitMs) throws Exception;

    /**
     * Takes {@code name} for {@code ttlMs} as a holder that then dies: never released, never
     * extended, and not by the caller's own owner (the caller waits for it next). Returns the
     * {@link System#nanoTime()} at which the holder's request was sent: its deadline is counted
     * from there.
     */
    long abandon(String name, long ttlMs) throws Exception;

    /** Waits for every one of {@code names} (the multi scenario); {@code ttlMs} the lease. */
    default Held acquireAll(List<String> names, long ttlMs, long waitMs) throws Exception {
        throw new UnsupportedOperationException("this subject has no call for several resources");
    }

    @Override
    void close() throws Exception;
}
