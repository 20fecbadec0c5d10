package dev.dlock.bench;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson 3.52.0's locks, as users call them, on ONE master: Redisson's lock lives on one Redis
 * (or one Cluster); its RedLock over independent masters is deprecated. Given several node URLs
 * it uses the first; given {@code cluster}, a Redis Cluster through that node. Redisson's
 * defaults otherwise (pools, 3 s timeout, 30 s watchdog).
 */
final class RedissonSubject implements Subject {
    enum Kind { LOCK, FAIR, FENCED }

    private final Kind kind;
    private final RedissonClient redisson;
    /** The dying holders' thread: Redisson's owner is client + thread, so not the caller's. */
    private final ExecutorService holder = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "dying-holder");
        t.setDaemon(true);
        return t;
    });

    RedissonSubject(Kind kind, List<String> urls, boolean cluster) {
        this.kind = kind;
        Config config = new Config();
        String address = urls.get(0).replaceAll("/+$", "");
        if (cluster) {
            config.useClusterServers().addNodeAddress(address);
        } else {
            config.useSingleServer().setAddress(address);
        }
        this.redisson = Redisson.create(config);
    }

    private RLock lock(String name) {
        return switch (kind) {
            case LOCK -> redisson.getLock(name);
            case FAIR -> redisson.getFairLock(name);
            case FENCED -> redisson.getFencedLock(name);
        };
    }

    /** Takes {@code lock} within {@code waitMs}, the fenced lock with its token (read). */
    private boolean take(RLock lock, long ttlMs, long waitMs) throws InterruptedException {
        if (lock instanceof RFencedLock fenced) {
            Long token = fenced.tryLockAndGetToken(waitMs, ttlMs, TimeUnit.MILLISECONDS);
            Main.sink(token == null ? 0 : token);
            return token != null;
        }
        return lock.tryLock(waitMs, ttlMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public Held tryAcquire(String name, long ttlMs) throws Exception {
        return acquire(name, ttlMs, 0);
    }

    @Override
    public Held acquire(String name, long ttlMs, long waitMs) throws Exception {
        RLock lock = lock(name);
        if (!take(lock, ttlMs, waitMs)) {
            throw new IllegalStateException(name + ": not acquired within " + waitMs + " ms");
        }
        return lock::unlock;
    }

    @Override
    public long abandon(String name, long ttlMs) throws Exception {
        RLock lock = lock(name);
        return holder.submit(() -> {
            long sent = System.nanoTime();
            if (!take(lock, ttlMs, 0)) {
                throw new IllegalStateException(name + ": held");
            }
            return sent;
        }).get();
    }

    /** {@code RedissonMultiLock.lock()}: each lock in the caller's order, the watchdog's lease. */
    @Override
    public Held acquireAll(List<String> names, long ttlMs, long waitMs) {
        RLock multi = redisson.getMultiLock(names.stream().map(this::lock).toArray(RLock[]::new));
        multi.lock();
        return multi::unlock;
    }

    @Override
    public void close() {
        holder.shutdownNow();
        redisson.shutdown(0, 2, TimeUnit.SECONDS);
    }
}
