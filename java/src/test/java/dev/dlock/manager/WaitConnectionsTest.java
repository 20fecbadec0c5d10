package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DistributedLock;
import dev.dlock.Lease;
import dev.dlock.LockManager;
import dev.dlock.testkit.Quorum;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A server-side wait borrows an idle connection of its own and gives it back after a clean reply
 * (docs/bench/java.md: one new connection per queued wait throttled contended handoffs).
 */
@Timeout(120)
class WaitConnectionsTest {
    private static final String RES = "handoff";

    /**
     * 200 handoffs, each waited on the server by one manager (through acquire and through
     * lock()), take a handful of connections, not one each. The probe's own connection (for INFO,
     * not redis-cli: each redis-cli run is a connection) is made before the count starts.
     */
    @Test
    void twoHundredQueuedWaitsReuseAFewConnections() throws Exception {
        ExecutorService waiting = Executors.newSingleThreadExecutor(); // lock()'s owner is its thread
        RedisClient probe = null;
        try (Quorum q = Quorum.start(1); LockManager holder = Fixtures.manager(q.urls());
                LockManager waiter = Fixtures.manager(q.urls())) {
            probe = RedisClient.create(RedisURI.create("127.0.0.1", q.get(0).port));
            try (StatefulRedisConnection<String, String> info = probe.connect()) {
                handoff(holder, waiter, waiting, info, 0); // the managers' shared connections made
                long before = stat(info, "stats", "total_connections_received");
                int n = 200;
                for (int i = 1; i <= n; i++) {
                    handoff(holder, waiter, waiting, info, i);
                }
                long made = stat(info, "stats", "total_connections_received") - before;
                System.out.println(n + " queued waits made " + made + " connections");
                assertTrue(made <= 10, n + " queued waits made " + made + " connections: a wait's connection is not reused");
            }
        } finally {
            waiting.shutdownNow();
            if (probe != null) {
                probe.shutdown();
            }
        }
    }

    /** holder holds RES, waiter's call queues on the server (seen blocked), holder lets go. */
    private static void handoff(LockManager holder, LockManager waiter, ExecutorService waiting,
            StatefulRedisConnection<String, String> info, int i) throws Exception {
        Lease held = holder.tryAcquire(RES, Duration.ofSeconds(10));
        CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> {
            if (i % 2 == 0) {
                waiter.acquire(RES, Duration.ofSeconds(10), Duration.ofSeconds(20)).release();
            } else {
                DistributedLock l = waiter.getLock(RES);
                l.lock();
                l.unlock();
            }
        }, waiting);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (stat(info, "clients", "blocked_clients") < 1) {
            assertTrue(System.nanoTime() < until, "handoff " + i + ": the waiter never queued on the server");
            Thread.sleep(1);
        }
        held.release();
        waited.get(20, TimeUnit.SECONDS);
    }

    private static long stat(StatefulRedisConnection<String, String> c, String section, String field) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(field) + ":(\\d+)").matcher(c.sync().info(section));
        if (!m.find()) {
            throw new AssertionError("INFO " + section + " has no " + field);
        }
        return Long.parseLong(m.group(1));
    }
}
