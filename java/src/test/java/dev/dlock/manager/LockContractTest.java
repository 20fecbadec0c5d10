package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DistributedLock;
import dev.dlock.LockLostException;
import dev.dlock.LockManager;
import dev.dlock.NoQuorumException;
import dev.dlock.Options;
import dev.dlock.testkit.Quorum;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The java.util.concurrent.locks.Lock contract's edges (DistributedLock's javadoc), each a test. */
@Timeout(60)
class LockContractTest {
    static Quorum q;
    static LockManager locks;

    @BeforeAll
    static void start() {
        q = Quorum.start(3);
        locks = LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofMillis(500)).lockTtl(Duration.ofSeconds(3)).build());
    }

    @AfterAll
    static void stop() {
        locks.close();
        q.close();
    }

    @Test
    void lockOnAHandleThatHoldsIsIllegalState() {
        DistributedLock lock = locks.getLock("held-twice");
        lock.lock();
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, lock::lock);
            assertTrue(e.getMessage().contains("a handle holds once"), e.getMessage());
            assertThrows(IllegalStateException.class, lock::tryLock);
        } finally {
            lock.unlock();
        }
    }

    @Test
    void unlockByAHandleThatDoesNotHoldIsIllegalMonitorState() {
        DistributedLock lock = locks.getLock("not-held");
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        lock.lock();
        lock.unlock();
        assertThrows(IllegalMonitorStateException.class, lock::unlock, "unlocked once, not twice");
        assertThrows(IllegalMonitorStateException.class, lock::token);
    }

    @Test
    void unlockAfterTheLeaseWasLostReleasesThenThrowsLockLost() throws Exception {
        DistributedLock lock = locks.getLock("lost");
        CountDownLatch told = new CountDownLatch(1);
        AtomicInteger times = new AtomicInteger();
        lock.addLostListener(() -> {
            times.incrementAndGet();
            told.countDown();
        });
        lock.lock();
        String owner = lock.lease().orElseThrow().owner();
        for (int i = 0; i < 3; i++) {
            q.get(i).cli("DLOCK.RELEASE", "lost", owner); // the nodes forget it: the next extension is refused
        }
        q.get(0).cli("DLOCK.ACQUIRE", "lost", "someone-else", "60000"); // and a newer holder on one node
        assertTrue(told.await(5, TimeUnit.SECONDS), "the lost listener fires");
        assertTrue(lock.isLost());
        assertFalse(lock.isHeld());
        assertThrows(IllegalStateException.class, lock::lock, "a lost lease is unlocked first");
        assertThrows(LockLostException.class, lock::unlock);
        assertEquals(1, times.get(), "the listener fires once");
        q.get(0).cli("DLOCK.RELEASE", "lost", "someone-else");
        lock.lock(); // a handle locks again after unlock
        lock.unlock();
    }

    @Test
    void lockWithNoQuorumIsNoQuorum() {
        try (Quorum down = Quorum.start(3); LockManager m = Fixtures.manager(down.urls())) {
            down.get(0).close();
            down.get(1).close();
            DistributedLock lock = m.getLock("no-quorum");
            NoQuorumException e = assertThrows(NoQuorumException.class, () -> lock.tryLock(200, TimeUnit.MILLISECONDS));
            assertTrue(e.getMessage().contains(down.get(0).url()), e.getMessage());
            assertThrows(NoQuorumException.class, lock::tryLock);
            assertFalse(lock.isHeld());
        }
    }

    @Test
    void aHandleLocksAgainAfterUnlockWithANewOwnerAndToken() {
        DistributedLock lock = locks.getLock("again");
        lock.lock();
        String owner = lock.lease().orElseThrow().owner();
        long token = lock.token();
        lock.unlock();
        lock.lock();
        assertTrue(lock.token() > token);
        assertFalse(owner.equals(lock.lease().orElseThrow().owner()));
        lock.unlock();
    }

    @Test
    void tryLockIsOneAttemptAndTryLockWithTimeWaits() throws Exception {
        DistributedLock a = locks.getLock("try");
        DistributedLock b = locks.getLock("try");
        assertTrue(a.tryLock());
        assertFalse(b.tryLock(), "held by another handle of the same manager: the owner is the handle");
        long t0 = System.nanoTime();
        assertFalse(b.tryLock(300, TimeUnit.MILLISECONDS));
        assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(290));
        CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return b.tryLock(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        Fixtures.sleep(200);
        a.unlock(); // a handle locked here, unlocked from the other thread below
        assertTrue(waiting.get(10, TimeUnit.SECONDS));
        CompletableFuture.runAsync(b::unlock).get(10, TimeUnit.SECONDS);
    }

    @Test
    void theWatchdogKeepsALockedHandleAndRedissonsShapeHasNone() throws Exception {
        DistributedLock watched = locks.getLock("watchdog"); // lockTtl 3 s
        watched.lock();
        Fixtures.sleep(4000);
        assertTrue(watched.isHeld(), "kept past its TTL by the watchdog");
        watched.unlock();
        DistributedLock leased = locks.getLock("leased");
        assertTrue(leased.tryLock(1, 500, TimeUnit.MILLISECONDS));
        Fixtures.sleep(800);
        assertFalse(leased.isHeld(), "a lease of 500 ms without a watchdog ends");
        assertTrue(locks.getLock("leased").tryLock(), "and the nodes let it go");
    }

    @Test
    void lockInterruptiblyWithdrawsTheWaitWhenInterrupted() throws Exception {
        DistributedLock holder = locks.getLock("interrupt");
        holder.lock();
        DistributedLock waiter = locks.getLock("interrupt");
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                waiter.lockInterruptibly();
                outcome.complete(null);
            } catch (InterruptedException e) {
                outcome.complete(e);
            }
        });
        t.start();
        Fixtures.sleep(300);
        t.interrupt();
        assertTrue(outcome.get(5, TimeUnit.SECONDS) instanceof InterruptedException);
        assertFalse(waiter.isHeld());
        for (int i = 0; i < 3; i++) {
            String w = q.get(i).cli("DLOCK.WAITERS", "interrupt");
            assertFalse(w.matches("(?s).*[0-9a-f]{32}.*"), "the wait was withdrawn: " + w);
        }
        holder.unlock();
    }

    @Test
    void newConditionIsRefusedAndCloseUnlocks() {
        DistributedLock lock = locks.getLock("condition");
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, lock::newCondition);
        assertTrue(e.getMessage().contains("no Condition"));
        try (DistributedLock l = locks.getLock("closed")) {
            l.lock();
        }
        assertTrue(locks.getLock("closed").tryLock(), "close() unlocked it");
    }
}
