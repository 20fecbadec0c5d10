package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockManager;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** One server-side wait per resource per manager (docs/waiting.md), the other callers queued in the process. */
@Timeout(120)
class LocalWaitsTest {
    @Test
    void fiveHundredThreadsHoldOneBlockedConnectionPerNodeAndAreAllServedInTurn() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager holder = Fixtures.manager(q.urls()); LockManager m = Fixtures.manager(q.urls())) {
            Lease held = holder.tryAcquire("busy", Duration.ofSeconds(30));
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger served = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(500);
            List<CompletableFuture<Void>> callers = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                callers.add(CompletableFuture.runAsync(() -> {
                    Lease l = m.acquire("busy", Duration.ofSeconds(10), Duration.ofSeconds(90));
                    assertEquals(1, inside.incrementAndGet(), "two holders at once");
                    inside.decrementAndGet();
                    served.incrementAndGet();
                    l.release();
                }, pool));
            }
            for (RedisProcess s : q.servers()) {
                Deployments.eventually(() -> Fixtures.info(s, "blocked_clients") == 1, "one wait on " + s.url());
            }
            Fixtures.sleep(300); // long enough for a second wait to show, were there one
            for (RedisProcess s : q.servers()) {
                assertEquals(1, Fixtures.info(s, "blocked_clients"), s.url());
                String waiters = s.cli("DLOCK.WAITERS", "busy");
                assertEquals(1, waiters.split("exclusive", -1).length - 1, "one queued owner on " + s.url() + ": " + waiters);
            }
            held.release();
            CompletableFuture.allOf(callers.toArray(new CompletableFuture<?>[0])).get(90, TimeUnit.SECONDS);
            pool.shutdown();
            assertEquals(500, served.get());
        }
    }

    @Test
    void aCallerWhoseWaitRunsOutWhileQueuedLocallyIsContendedOnTime() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager holder = Fixtures.manager(q.urls()); LockManager m = Fixtures.manager(q.urls())) {
            Lease held = holder.tryAcquire("busy", Duration.ofSeconds(30));
            CompletableFuture<Lease> first = m.acquireAsync("busy", Duration.ofSeconds(10), Duration.ofSeconds(20));
            for (RedisProcess s : q.servers()) {
                Deployments.eventually(() -> Fixtures.info(s, "blocked_clients") == 1, "the first waits on " + s.url());
            }
            long t0 = System.nanoTime();
            LockContendedException e = assertThrows(LockContendedException.class,
                    () -> m.acquire("busy", Duration.ofSeconds(10), Duration.ofMillis(400)));
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            // On time: well before the first's 20 s wait ends, with room for a loaded 2-core machine.
            assertTrue(took >= 390 && took < 2_500, "answered after " + took + " ms: " + e.getMessage());
            held.release();
            first.get(10, TimeUnit.SECONDS).release();
        }
    }

    /**
     * A shared hold waits on the nodes each time (the local-waits adversary): a turn in the process
     * put the second reader behind another process's writer that queued after the first reader.
     */
    @Test
    void twoReadersOfOneManagerHoldTogetherPastAnotherProcesssWriter() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager holder = Fixtures.manager(q.urls());
                LockManager readers = Fixtures.manager(q.urls()); LockManager writer = Fixtures.manager(q.urls())) {
            Lease held = holder.tryAcquire("rw", Duration.ofSeconds(10));
            Duration ttl = Duration.ofSeconds(10);
            CompletableFuture<Lease> first = readers.acquireAsync(dev.dlock.Resource.shared("rw"), ttl, Duration.ofSeconds(3));
            Fixtures.sleep(100);
            CompletableFuture<Lease> second = readers.acquireAsync(dev.dlock.Resource.shared("rw"), ttl, Duration.ofSeconds(3));
            Fixtures.sleep(100);
            CompletableFuture<Lease> written = writer.acquireAsync("rw", ttl, Duration.ofSeconds(10));
            Fixtures.sleep(100);
            held.release();
            Lease one = first.get(5, TimeUnit.SECONDS);
            Lease two = second.get(1, TimeUnit.SECONDS); // beside the first, ahead of the writer
            two.release();
            one.release();
            written.get(10, TimeUnit.SECONDS).release();
        }
    }
}
