package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DistributedLock;
import dev.dlock.InvalidArgumentException;
import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockLostException;
import dev.dlock.LockManager;
import dev.dlock.Resource;
import dev.dlock.ResourceSet;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sets on three real servers (go/sets_test.go): all or nothing on every node, the queued wait,
 * refusals before anything is sent, shared members, the loss of a member, opposite orders, and
 * the multi lock.
 */
@Timeout(90)
class SetsTest {
    private static final Duration TTL = Duration.ofSeconds(10);

    /** No server holds any of keys. */
    static void freeEverywhere(List<RedisProcess> servers, String... keys) {
        for (RedisProcess s : servers) {
            for (String k : keys) {
                assertEquals("\n", s.cli("DLOCK.STATUS", k), s.url() + " holds " + k);
            }
        }
    }

    @Test
    void aSetIsRefusedWholeWhileOneMemberIsHeldElsewhere() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease blocker = m.tryAcquire("b", TTL);
            LockContendedException e = assertThrows(LockContendedException.class, () -> m.tryAcquireAll(List.of("a", "b", "c"), TTL));
            assertEquals("a,b,c", e.resource());
            freeEverywhere(q.servers(), "a", "c");
            q.servers().forEach(s -> assertTrue(s.cli("DLOCK.STATUS", "b").contains(blocker.owner())));
            blocker.release();

            Lease set = m.tryAcquireAll(List.of("a", "b", "c"), TTL);
            long token = set.token(); // the commit (FENCEALL) is paid here
            for (String k : List.of("a", "b", "c")) {
                long committed = q.servers().stream()
                        .filter(s -> s.cli("DLOCK.STATUS", k).contains(set.owner() + "\ntoken\n" + token + "\n")).count();
                assertTrue(committed >= 2, k + ": token " + token + " on " + committed + " nodes");
            }
            assertEquals(List.of("a", "b", "c"), set.resources());
            assertEquals(List.of(token, token, token), set.tokens());
            set.release();
            freeEverywhere(q.servers(), "a", "b", "c");
        }
    }

    @Test
    void aQueuedSetIsGrantedWhenItsLastMemberFrees() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease blocker = m.tryAcquire("y", TTL);
            CompletableFuture<Lease> waiting = m.acquireAllAsync(List.of("x", "y"), TTL, Duration.ofSeconds(20));
            Deployments.eventually(() -> q.get(0).cli("DLOCK.STATUS", "y").contains("waiters\n1\n"), "the set queued on y");
            freeEverywhere(q.servers(), "x"); // queued, holding nothing
            Fixtures.sleep(200);
            assertFalse(waiting.isDone(), "granted while y was held");
            blocker.release();
            Lease set = waiting.get(10, TimeUnit.SECONDS);
            assertTrue(set.token() > 0);
            set.release();
            freeEverywhere(q.servers(), "x", "y");
        }
    }

    @Test
    void aKeyGivenTwiceIsRefusedBeforeAnythingIsSent() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            assertThrows(InvalidArgumentException.class, () -> m.tryAcquireAll(List.of("a", "b", "a"), TTL));
            assertThrows(InvalidArgumentException.class, () -> m.acquireAll(List.of("a", "a"), TTL, Duration.ofSeconds(1)));
            assertThrows(InvalidArgumentException.class, () -> m.getMultiLock("a", "a"));
            assertThrows(InvalidArgumentException.class, () -> ResourceSet.of(Resource.exclusive("a"), Resource.shared("a")));
            assertThrows(InvalidArgumentException.class, () -> ResourceSet.of(Resource.semaphore("a", 2)));
            for (RedisProcess s : q.servers()) {
                assertEquals(0, Fixtures.calls(s, "dlock.acquireall"), s.url());
            }
        }
    }

    @Test
    void twoSetsSharingAKeyInSharedModeBothHold() {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease one = m.tryAcquireAll(ResourceSet.of(Resource.exclusive("acct:1"), Resource.shared("ledger")), TTL);
            Lease two = m.tryAcquireAll(ResourceSet.of(Resource.exclusive("acct:2"), Resource.shared("ledger")), TTL);
            assertThrows(LockContendedException.class, () -> m.tryAcquireAll(List.of("ledger"), TTL), "ledger exclusive beside its readers");
            assertTrue(one.token() > 0 && two.token() > one.token());
            one.release();
            two.release();
            freeEverywhere(q.servers(), "acct:1", "acct:2", "ledger");
        }
    }

    @Test
    void aSetMissingAMemberIsLost() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Lease set = m.tryAcquireAll(List.of("m1", "m2"), Duration.ofMillis(1500));
            CountDownLatch told = new CountDownLatch(1);
            set.onLost(told::countDown);
            q.servers().forEach(s -> s.cli("DEL", "m2"));
            assertThrows(LockLostException.class, set::extend, "extending a set missing a member");
            set.watch(); // its first extension is refused: the set is lost at once
            assertTrue(told.await(10, TimeUnit.SECONDS), "the loss was never told");
            assertTrue(set.isLost());
            freeEverywhere(q.servers(), "m1", "m2"); // the nodes gave back what was left
            set.release();
        }
    }

    @Test
    void setsInOppositeOrdersNeitherDeadlockNorOverlap() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger overlaps = new AtomicInteger();
            List<CompletableFuture<Void>> callers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                List<String> keys = i % 2 == 0 ? List.of("p", "q") : List.of("q", "p");
                callers.add(CompletableFuture.runAsync(() -> {
                    for (int round = 0; round < 10; round++) {
                        Lease set = m.acquireAll(keys, TTL, Duration.ofSeconds(30));
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        Fixtures.sleep(2);
                        inside.decrementAndGet();
                        set.release();
                    }
                }));
            }
            CompletableFuture.allOf(callers.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
            assertEquals(0, overlaps.get());
            freeEverywhere(q.servers(), "p", "q");
        }
    }

    @Test
    void aMultiLockIsALockOverTheWholeSet() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls()); LockManager other = Fixtures.manager(q.urls())) {
            DistributedLock lock = m.getMultiLock("ma", "mb");
            assertThrows(IllegalStateException.class, lock::resource);
            assertEquals(List.of(Resource.exclusive("ma"), Resource.exclusive("mb")), lock.resources());
            Lease blocker = other.tryAcquire("mb", TTL);
            assertFalse(lock.tryLock());
            assertFalse(lock.tryLock(300, TimeUnit.MILLISECONDS));
            freeEverywhere(q.servers(), "ma");
            blocker.release();
            lock.lock();
            assertTrue(lock.isHeld() && lock.token() > 0);
            assertEquals(List.of(lock.token(), lock.token()), lock.tokens());
            assertThrows(LockContendedException.class, () -> other.tryAcquire("ma", TTL));
            lock.unlock();
            freeEverywhere(q.servers(), "ma", "mb");
        }
    }
}
