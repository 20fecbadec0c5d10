package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.*;

import dev.dlock.*;
import dev.dlock.testkit.Quorum;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.*;
import org.junit.jupiter.api.*;

/** The manager's close, and a manager's first lock: from the adversary's repros (docs/java.md). */
@Timeout(60)
class CloseTest {
    static Quorum q;

    @BeforeAll
    static void start() {
        q = Quorum.start(3);
    }

    @AfterAll
    static void stop() {
        q.close();
    }

    static LockManager manager() {
        return LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofMillis(500)).build());
    }

    /**
     * LockManager.close() answers a lock() caller waiting on the nodes and one queued behind it in
     * the process, both with ManagerClosedException, at once.
     */
    @Test
    void closeAnswersAWaitingLock() throws Exception {
        try (LockManager holder = manager()) {
            holder.tryAcquire("close-wait", Duration.ofSeconds(30));
            LockManager locks = manager();
            CompletableFuture<String> onNodes = new CompletableFuture<>();
            CompletableFuture<String> local = new CompletableFuture<>();
            Thread a = new Thread(() -> { try { locks.getLock("close-wait").lock(); onNodes.complete("held"); } catch (Throwable e) { onNodes.complete(e.getClass().getSimpleName()); } });
            a.setDaemon(true);
            a.start();
            Thread.sleep(500);
            Thread b = new Thread(() -> { try { locks.getLock("close-wait").lock(); local.complete("held"); } catch (Throwable e) { local.complete(e.getClass().getSimpleName()); } });
            b.setDaemon(true);
            b.start();
            Thread.sleep(300);
            locks.close();
            long cpu0 = ManagementFactory.getThreadMXBean().getThreadCpuTime(a.getId());
            Thread.sleep(2000);
            long cpu1 = ManagementFactory.getThreadMXBean().getThreadCpuTime(a.getId());
            System.out.println("2 s after close: on-nodes caller " + (onNodes.isDone() ? onNodes.get() : "STILL WAITING (" + a.getState() + ", cpu "
                    + (cpu1 - cpu0) / 1_000_000 + " ms in 2 s)") + "; local caller " + (local.isDone() ? local.get() : "STILL WAITING (" + b.getState() + ")"));
            assertTrue(onNodes.isDone(), "the caller waiting on the nodes is answered by close");
            assertTrue(local.isDone(), "the caller queued locally is answered by close");
            assertEquals("ManagerClosedException", onNodes.get());
            assertEquals("ManagerClosedException", local.get());
        }
    }

    /** After the manager's close an observer's next change is ManagerClosedException, no false NoQuorum first. */
    @Test
    void observerEndsWithManagerClosed() throws Exception {
        LockManager locks = manager();
        ElectionObserver obs = locks.observe("obs-close");
        obs.next(Duration.ofSeconds(2));
        locks.close();
        List<String> seen = new ArrayList<>();
        Throwable thrown = null;
        for (int i = 0; i < 3 && thrown == null; i++) {
            try {
                seen.add(String.valueOf(obs.next(Duration.ofMillis(500))));
            } catch (Throwable e) {
                thrown = e;
            }
        }
        System.out.println("observer after manager close: changes " + seen + " then " + thrown);
        assertEquals(List.of(), seen, "no change between the close and its end");
        assertTrue(thrown instanceof ManagerClosedException, "docs/java.md: after the manager's close, next throws ManagerClosedException; got " + seen + " / " + thrown);
    }

    /**
     * acquire(res, ttl, wait=0) on a free resource, on fresh managers (first lock of each, its
     * connections set up in the call): a grant, or an honest no-quorum naming the nodes that
     * could not be reached in time, never contention (a zero wait is one attempt that does not
     * wait on the nodes: LockManager.take).
     */
    @Test
    void zeroWaitOnAFreeLockIsNeverContended() {
        int ok = 0;
        List<String> bad = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            try (LockManager m = (i % 2 == 0) ? manager() : LockManager.connect(q.urls())) {
                try {
                    m.acquire("zero-" + i, Duration.ofSeconds(5), Duration.ZERO).release();
                    ok++;
                } catch (Throwable e) {
                    bad.add("#" + i + " " + e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
        }
        System.out.println("acquire(wait 0) on free locks: ok=" + ok + " failed=" + bad);
        assertTrue(bad.stream().allMatch(b -> b.contains("NoQuorumException")), bad.toString());
        assertTrue(ok >= 20, "most first calls are granted: " + ok + " of 30, " + bad);
    }

    /** Threads after a plain connect, lock, unlock, close. */
    @Test
    void threadsAfterClose() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        for (int i = 0; i < 3; i++) {
            LockManager locks = manager();
            DistributedLock l = locks.getLock("threads");
            l.lock();
            l.token();
            l.unlock();
            locks.observe("threads-obs").next(Duration.ofSeconds(1));
            locks.close();
        }
        Thread.sleep(3000);
        List<String> left = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) if (!before.contains(t) && t.isAlive()) left.add(t.getName());
        System.out.println("threads left after 3 managers closed: " + left);
        assertTrue(left.isEmpty(), left.toString());
    }
}
