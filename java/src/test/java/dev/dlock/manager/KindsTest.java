package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DistributedLock;
import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockManager;
import dev.dlock.Resource;
import dev.dlock.WrongKindException;
import dev.dlock.testkit.Quorum;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Shared locks and semaphores through the manager. */
@Timeout(60)
class KindsTest {
    @Test
    void twoSharedHoldersAtOnceAndAnExclusiveWaitsForBoth() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease r1 = m.tryAcquire(Resource.shared("doc"), Duration.ofSeconds(10));
            Lease r2 = m.tryAcquire(Resource.shared("doc"), Duration.ofSeconds(10));
            assertThrows(LockContendedException.class, () -> m.tryAcquire("doc", Duration.ofSeconds(10)));
            CompletableFuture<Lease> writer = m.acquireAsync("doc", Duration.ofSeconds(10), Duration.ofSeconds(20));
            Fixtures.sleep(200);
            r1.release();
            Fixtures.sleep(200);
            assertFalse(writer.isDone(), "one reader still holds");
            r2.release();
            Lease w = writer.get(10, TimeUnit.SECONDS);
            assertThrows(LockContendedException.class, () -> m.tryAcquire(Resource.shared("doc"), Duration.ofSeconds(10)));
            w.release();
            DistributedLock reader = m.getSharedLock("doc");
            DistributedLock other = m.getSharedLock("doc");
            assertTrue(reader.tryLock());
            assertTrue(other.tryLock());
            reader.unlock();
            other.unlock();
        }
    }

    @Test
    void aSemaphoreOfTwoAdmitsTwo() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            DistributedLock a = m.getSemaphore("pool", 2);
            DistributedLock b = m.getSemaphore("pool", 2);
            DistributedLock c = m.getSemaphore("pool", 2);
            assertTrue(a.tryLock());
            assertTrue(b.tryLock());
            assertFalse(c.tryLock(), "a third permit of two");
            assertThrows(WrongKindException.class, () -> m.tryAcquire("pool", Duration.ofSeconds(1)));
            a.unlock();
            assertTrue(c.tryLock());
            b.unlock();
            c.unlock();
        }
    }
}
