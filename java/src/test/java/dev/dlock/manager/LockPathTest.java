package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockLostException;
import dev.dlock.LockManager;
import dev.dlock.NoQuorumException;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The lock path through the manager against real servers: 1, 3 and 5 nodes. */
@Timeout(60)
class LockPathTest {
    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5})
    void tryAcquireExtendReleaseWithRisingTokensAndContention(int n) {
        try (Quorum q = Quorum.start(n); LockManager a = Fixtures.manager(q.urls()); LockManager b = Fixtures.manager(q.urls())) {
            Lease first = a.tryAcquire("res", Duration.ofSeconds(10));
            long t1 = first.token();
            assertTrue(t1 > 0);
            assertThrows(LockContendedException.class, () -> b.tryAcquire("res", Duration.ofSeconds(10)));
            first.extend(Duration.ofSeconds(20));
            assertTrue(first.validity().compareTo(Duration.ofSeconds(15)) > 0, first.toString());
            first.release();
            Lease second = b.acquire("res", Duration.ofSeconds(10), Duration.ofSeconds(5));
            assertTrue(Long.compareUnsigned(second.token(), t1) > 0, second.token() + " after " + t1);
            assertThrows(LockLostException.class, first::extend, "a released lease does not extend");
            second.release();
        }
    }

    @Test
    void queuedWaitersAreServedInArrivalOrder() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager holder = Fixtures.manager(q.urls())) {
            Lease held = holder.tryAcquire("queue", Duration.ofSeconds(10));
            List<Integer> order = Collections.synchronizedList(new ArrayList<>());
            List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
            List<LockManager> managers = new ArrayList<>();
            List<CompletableFuture<Void>> waiters = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    LockManager m = Fixtures.manager(q.urls()); // separate managers: the nodes' queue orders them
                    managers.add(m);
                    int me = i;
                    waiters.add(CompletableFuture.runAsync(() -> {
                        Lease l = m.acquire("queue", Duration.ofSeconds(10), Duration.ofSeconds(30));
                        order.add(me);
                        tokens.add(l.token());
                        l.release();
                    }));
                    Fixtures.sleep(150); // each one queued before the next arrives
                }
                held.release();
                CompletableFuture.allOf(waiters.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
            } finally {
                managers.forEach(LockManager::close);
            }
            assertEquals(List.of(0, 1, 2, 3), order);
            for (int i = 1; i < tokens.size(); i++) {
                assertTrue(tokens.get(i) > tokens.get(i - 1), "tokens rise: " + tokens);
            }
        }
    }

    @Test
    void aMinorityDownStillLocksAMajorityDownIsNoQuorumNamingTheNodes() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            q.get(2).close();
            Lease l = m.tryAcquire("minority", Duration.ofSeconds(10));
            assertTrue(l.token() > 0);
            l.release();
            q.get(1).close();
            NoQuorumException e = assertThrows(NoQuorumException.class, () -> m.tryAcquire("majority", Duration.ofSeconds(10)));
            assertEquals(2, e.needed());
            assertTrue(e.getMessage().contains(q.get(1).url() + ": connection refused"), e.getMessage());
            assertTrue(e.getMessage().contains(q.get(2).url() + ": connection refused"), e.getMessage());
            assertThrows(NoQuorumException.class, () -> m.acquire("majority", Duration.ofSeconds(10), Duration.ofMillis(300)));
        }
    }

    @Test
    void aTryAcquiresTokenIsCommittedOnFirstReadInOneRoundForEveryReader() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease l = m.tryAcquire("commit", Duration.ofSeconds(10));
            for (RedisProcess s : q.servers()) {
                assertEquals(0, Fixtures.calls(s, "dlock.fence"), "nothing committed before the token is read");
            }
            ExecutorService pool = Executors.newFixedThreadPool(16);
            CountDownLatch go = new CountDownLatch(1);
            List<CompletableFuture<Long>> readers = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                readers.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    return l.token();
                }, pool));
            }
            go.countDown();
            for (CompletableFuture<Long> r : readers) {
                assertEquals(readers.get(0).get(10, TimeUnit.SECONDS), r.get(10, TimeUnit.SECONDS));
            }
            pool.shutdown();
            long committed = 0;
            for (RedisProcess s : q.servers()) {
                long fences = Fixtures.calls(s, "dlock.fence");
                assertTrue(fences <= 1, "one FENCE round for 16 readers, got " + fences);
                committed += fences;
                String status = s.cli("DLOCK.STATUS", "commit");
                assertTrue(status.contains(l.owner()), status);
            }
            assertTrue(committed >= 2, "a majority committed");
            l.release();
        }
    }

    @Test
    void aCommitThatMissesTheQuorumIsLockLost() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease l = m.tryAcquire("uncommitted", Duration.ofSeconds(10));
            List<String> told = new ArrayList<>();
            l.onLost(() -> told.add("lost"));
            q.get(0).cli("DLOCK.RELEASE", "uncommitted", l.owner());
            q.get(1).cli("DLOCK.RELEASE", "uncommitted", l.owner());
            assertThrows(LockLostException.class, l::token);
            assertTrue(l.isLost());
            assertThrows(LockLostException.class, l::token, "the outcome is remembered");
            l.release();
        }
    }

    @Test
    void theWatchdogKeepsAOneSecondLeaseForThreeSeconds() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls()); LockManager other = Fixtures.manager(q.urls())) {
            Lease l = m.tryAcquire("watched", Duration.ofSeconds(1));
            l.watch();
            Fixtures.sleep(3000);
            assertFalse(l.isLost());
            assertTrue(l.validity().toMillis() > 0);
            assertThrows(LockContendedException.class, () -> other.tryAcquire("watched", Duration.ofSeconds(1)));
            l.release();
            other.tryAcquire("watched", Duration.ofSeconds(1)).release();
        }
    }

    /**
     * A majority frozen (SIGSTOP) while a watched lease is held: the lost listener fires by the
     * renew deadline (a tenth of the TTL before validity ends, conformance/renewals.json), never
     * after validity could have ended on the nodes.
     */
    @Test
    void aFrozenMajorityLosesAWatchedLeaseByItsRenewDeadline() {
        try (Quorum q = Quorum.start(3); LockManager m = LockManager.connect(q.urls(),
                dev.dlock.Options.builder().timeout(Duration.ofMillis(100)).build())) {
            Duration ttl = Duration.ofMillis(1500);
            Lease l = m.tryAcquire("frozen", ttl);
            CompletableFuture<Long> lostAt = new CompletableFuture<>();
            l.onLost(() -> lostAt.complete(System.nanoTime()));
            l.watch();
            Fixtures.sleep(700); // an extension or two confirmed
            assertFalse(l.isLost());
            q.get(0).signal("STOP");
            q.get(1).signal("STOP");
            try {
                long frozenAt = System.nanoTime();
                // The latest the renew deadline can be: a confirmed extension just before the
                // freeze, its validity counted from then, less the margin.
                long deadline = frozenAt + ttl.toNanos() - ttl.toNanos() / 10;
                long at = lostAt.get(5, TimeUnit.SECONDS);
                assertTrue(at - deadline < TimeUnit.MILLISECONDS.toNanos(60),
                        "lost " + (at - deadline) / 1_000_000 + " ms after the renew deadline");
                assertTrue(l.isLost());
                assertEquals(Duration.ZERO, l.validity());
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                q.get(0).signal("CONT");
                q.get(1).signal("CONT");
            }
        }
    }
}
