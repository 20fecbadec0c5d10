package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.*;

import dev.dlock.*;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.*;

/**
 * How a wait ends: cancelled (acquireAsync), interrupted (lockInterruptibly), or by the manager's
 * close; nothing of it stays on the nodes. (From the adversary's repros, docs/java.md.)
 */
@Timeout(90)
class WaitEndsTest {
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
        return LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofMillis(500)).lockTtl(Duration.ofSeconds(3)).build());
    }

    static long info(RedisProcess s, String field) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(field) + ":(\\d+)").matcher(s.cli("INFO"));
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    static String waiters(String res) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            sb.append("[").append(q.get(i).cli("DLOCK.WAITERS", res).trim().replace('\n', ' ')).append("]");
        }
        return sb.toString();
    }

    static void waitFor(String what, java.util.function.BooleanSupplier c, long ms) throws InterruptedException {
        long until = System.currentTimeMillis() + ms;
        while (!c.getAsBoolean()) {
            if (System.currentTimeMillis() > until) fail("timed out waiting for " + what);
            Thread.sleep(10);
        }
    }

    /**
     * Cancelling an acquireAsync future withdraws its wait (its round RELEASEd on the nodes, its
     * place in the process's queue left): the next caller gets the lock once the holder releases.
     * conformance/README.md: "one cancelled or aborted there leaves the queue and hands nothing on".
     */
    @Test
    void cancelledAcquireAsyncWithdrawsItsWait() throws Exception {
        try (LockManager holder = manager(); LockManager locks = manager()) {
            Lease h = holder.acquire("async-cancel", Duration.ofSeconds(30), Duration.ZERO);
            CompletableFuture<Lease> f = locks.acquireAsync("async-cancel", Duration.ofSeconds(20), Duration.ofSeconds(30));
            waitFor("the async wait on the nodes", () -> waiters("async-cancel").contains(":"), 3000);
            assertTrue(f.cancel(true));
            Thread.sleep(200);
            String after = waiters("async-cancel");
            assertEquals("[][][]", after, "the cancelled wait is withdrawn on every node");
            h.release();
            DistributedLock next = locks.getLock("async-cancel");
            boolean got = next.tryLock(3, TimeUnit.SECONDS);
            System.out.println("waiters after cancel: " + after + "; next caller got it: " + got + "; node 0: "
                    + q.get(0).cli("DLOCK.STATUS", "async-cancel").replace('\n', ' '));
            if (got) next.unlock();
            assertTrue(got, "a cancelled acquireAsync kept its turn (and took the lock): the next caller starved");
        }
    }

    /** Interrupt a lockInterruptibly queued on the nodes, and one queued locally; nothing stays on the nodes. */
    @Test
    void interruptWhileQueuedOnNodesAndLocally() throws Exception {
        try (LockManager holder = manager(); LockManager locks = manager()) {
            Lease h = holder.acquire("intr", Duration.ofSeconds(30), Duration.ZERO);
            List<Thread> ts = new ArrayList<>();
            ConcurrentLinkedQueue<String> out = new ConcurrentLinkedQueue<>();
            for (int i = 0; i < 4; i++) {
                int n = i;
                Thread t = new Thread(() -> {
                    DistributedLock l = locks.getLock("intr");
                    try {
                        l.lockInterruptibly();
                        out.add(n + ":held");
                        l.unlock();
                    } catch (InterruptedException e) {
                        out.add(n + ":interrupted");
                    } catch (Throwable e) {
                        out.add(n + ":" + e);
                    }
                });
                t.start();
                ts.add(t);
                Thread.sleep(100);
            }
            waitFor("one wait on the nodes", () -> waiters("intr").contains(":"), 3000);
            // interrupt #0 (on the nodes) and #2 (local)
            ts.get(0).interrupt();
            ts.get(2).interrupt();
            ts.get(0).join(2000);
            ts.get(2).join(2000);
            assertFalse(ts.get(0).isAlive());
            assertFalse(ts.get(2).isAlive());
            Thread.sleep(300);
            System.out.println("after interrupts: " + out + " waiters " + waiters("intr"));
            long t0 = System.nanoTime();
            h.release();
            for (Thread t : ts) t.join(5000);
            System.out.println("served in " + (System.nanoTime() - t0) / 1_000_000 + " ms: " + out + " waiters " + waiters("intr"));
            assertEquals(Set.of("0:interrupted", "1:held", "2:interrupted", "3:held"), Set.copyOf(out));
            assertEquals("[][][]", waiters("intr"));
        }
    }

    /** Many lockInterruptibly callers with interrupts at random moments (queued locally, on the nodes, while committing). */
    @Test
    void interruptsAtRandom() throws Exception {
        try (LockManager locks = manager()) {
            AtomicInteger inside = new AtomicInteger(), maxInside = new AtomicInteger(), held = new AtomicInteger(), intr = new AtomicInteger(), other = new AtomicInteger();
            ExecutorService ex = Executors.newFixedThreadPool(40);
            List<Future<?>> fs = new ArrayList<>();
            ConcurrentLinkedQueue<Throwable> errs = new ConcurrentLinkedQueue<>();
            for (int i = 0; i < 400; i++) {
                fs.add(ex.submit(() -> {
                    DistributedLock l = locks.getLock("rand");
                    try {
                        l.lockInterruptibly();
                    } catch (InterruptedException e) {
                        intr.incrementAndGet();
                        return;
                    } catch (Throwable e) {
                        errs.add(e);
                        other.incrementAndGet();
                        return;
                    }
                    int n = inside.incrementAndGet();
                    maxInside.accumulateAndGet(n, Math::max);
                    held.incrementAndGet();
                    inside.decrementAndGet();
                    Thread.interrupted();
                    try { l.unlock(); } catch (Throwable e) { errs.add(e); }
                }));
            }
            ThreadLocalRandom r = ThreadLocalRandom.current();
            for (int i = 0; i < 400; i++) {
                if (r.nextInt(3) == 0) fs.get(i).cancel(true);
                Thread.sleep(r.nextInt(3));
            }
            ex.shutdown();
            assertTrue(ex.awaitTermination(60, TimeUnit.SECONDS), "every caller answered");
            Thread.sleep(500);
            System.out.println("random interrupts: held=" + held + " interrupted=" + intr + " other=" + other + " maxInside=" + maxInside
                    + " errs=" + errs.stream().map(Object::toString).distinct().limit(3).toList() + " waiters " + waiters("rand")
                    + " status0 " + q.get(0).cli("DLOCK.STATUS", "rand").replace('\n', ' '));
            assertEquals(1, maxInside.get());
            assertEquals("[][][]", waiters("rand"));
            assertTrue(errs.isEmpty(), errs.toString());
            DistributedLock l = locks.getLock("rand");
            assertTrue(l.tryLock(2, TimeUnit.SECONDS), "free afterwards");
            l.unlock();
        }
    }

    /**
     * LockManager.close() with a lock held, callers waiting on the nodes and locally, an async
     * waiter and an observer: every caller answered ManagerClosedException, no thread left,
     * nothing blocked on the nodes, and unlock() after it says the manager is closed.
     */
    @Test
    void closeAnswersEveryCallerAndLeavesNoThread() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        LockManager holder = manager();
        Lease h = holder.acquire("closing", Duration.ofSeconds(30), Duration.ZERO);
        LockManager locks = manager();
        DistributedLock mine = locks.getLock("closing-held");
        mine.lock();
        ConcurrentLinkedQueue<String> out = new ConcurrentLinkedQueue<>();
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            int n = i;
            boolean interruptible = i % 2 == 0;
            Thread t = new Thread(() -> {
                DistributedLock l = locks.getLock("closing");
                try {
                    if (interruptible) l.lockInterruptibly(); else l.lock();
                    out.add(n + ":held");
                } catch (Throwable e) {
                    out.add(n + ":" + e.getClass().getSimpleName());
                }
            });
            t.setDaemon(true);
            t.start();
            ts.add(t);
            Thread.sleep(50);
        }
        CompletableFuture<Lease> async = locks.acquireAsync("closing", Duration.ofSeconds(5), Duration.ofSeconds(60));
        ElectionObserver obs = locks.observe("closing-elect");
        obs.next(Duration.ofSeconds(2));
        waitFor("a wait on the nodes", () -> waiters("closing").contains(":"), 3000);
        Thread.sleep(300);
        long blockedBefore = info(q.get(0), "blocked_clients");
        long t0 = System.nanoTime();
        locks.close();
        long closeMs = (System.nanoTime() - t0) / 1_000_000;
        for (Thread t : ts) t.join(5000);
        String asyncOut;
        try {
            asyncOut = "value " + async.get(5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            asyncOut = e.getCause().getClass().getSimpleName();
        } catch (TimeoutException e) {
            asyncOut = "NOT ANSWERED";
        }
        String obsOut;
        try {
            obsOut = "next " + obs.next(Duration.ofSeconds(1));
        } catch (Throwable e) {
            obsOut = e.getClass().getSimpleName();
        }
        Thread.sleep(500);
        long alive = ts.stream().filter(Thread::isAlive).count();
        List<String> left = threadsLeft(before, ts);
        System.out.println("close took " + closeMs + " ms; callers " + out + " alive " + alive + "; async " + asyncOut + "; observer " + obsOut
                + "; blocked before " + blockedBefore + " after " + info(q.get(0), "blocked_clients") + "; waiters " + waiters("closing")
                + "; threads left " + left + "; lock held via mine isHeld=" + mine.isHeld());
        for (Thread t : ts) {
            if (t.isAlive()) {
                StringBuilder sb = new StringBuilder();
                for (StackTraceElement e : t.getStackTrace()) sb.append("\n  ").append(e);
                System.out.println("STILL ALIVE " + t.getName() + sb.toString().lines().limit(14).reduce("", (a, b) -> a + "\n" + b));
            }
        }
        String unlock;
        try { mine.unlock(); unlock = "ok"; } catch (Throwable e) { unlock = e.getClass().getSimpleName() + ": " + e.getMessage(); }
        System.out.println("unlock after close -> " + unlock);
        h.release();
        holder.close();
        assertEquals(0, alive, "every caller answered by close");
        assertEquals(Set.of("0:ManagerClosedException", "1:ManagerClosedException", "2:ManagerClosedException",
                "3:ManagerClosedException"), Set.copyOf(out));
        assertEquals("ManagerClosedException", asyncOut);
        assertEquals("ManagerClosedException", obsOut);
        assertTrue(unlock.startsWith("ManagerClosedException"), unlock);
        assertEquals("[][][]", waiters("closing"));
        assertEquals(0, blockedAfter(), "no wait left blocked on the nodes");
        // Both managers closed: none of their threads (dlock's, Lettuce's) is left.
        waitFor("the managers' threads to end", () -> threadsLeft(before, ts).isEmpty(), 5000);
    }

    static long blockedAfter() {
        long n = 0;
        for (int i = 0; i < 3; i++) {
            n += info(q.get(i), "blocked_clients");
        }
        return n;
    }

    // Threads started since before that are alive, but the callers' own and Netty's global
    // executor (shared by the JVM, it ends by itself a second after it was last used).
    static List<String> threadsLeft(Set<Thread> before, List<Thread> callers) {
        List<String> left = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && t.isAlive() && !callers.contains(t) && !t.getName().startsWith("globalEventExecutor")) {
                left.add(t.getName());
            }
        }
        return left;
    }

    /** Many threads read an uncommitted token at once: one FENCE round, one value; after release/loss: lost. */
    @Test
    void tokenReadConcurrently() throws Exception {
        try (LockManager locks = manager()) {
            long fences0 = fences();
            Lease l = locks.tryAcquire("tok", Duration.ofSeconds(5));
            ExecutorService ex = Executors.newFixedThreadPool(64);
            List<Future<Long>> fs = new ArrayList<>();
            CountDownLatch go = new CountDownLatch(1);
            for (int i = 0; i < 64; i++) fs.add(ex.submit(() -> { go.await(); return l.token(); }));
            go.countDown();
            Set<Long> seen = new java.util.HashSet<>();
            for (Future<Long> f : fs) seen.add(f.get());
            ex.shutdown();
            System.out.println("64 readers: tokens " + seen + " fences sent " + (fences() - fences0));
            assertEquals(1, seen.size());
            assertEquals(3, fences() - fences0);
            l.release();
            System.out.println("token after release (committed before) -> " + InputsTest.kind(() -> l.token()));
            Lease l2 = locks.tryAcquire("tok2", Duration.ofSeconds(5));
            l2.release();
            long f1 = fences();
            System.out.println("token after release (never read) -> " + InputsTest.kind(() -> l2.token()) + ", fences " + (fences() - f1));
            Lease l3 = locks.tryAcquire("tok3", Duration.ofSeconds(5));
            AtomicInteger told = new AtomicInteger();
            l3.onLost(told::incrementAndGet);
            for (int i = 0; i < 3; i++) q.get(i).cli("DLOCK.RELEASE", "tok3", l3.owner());
            System.out.println("token after loss behind its back -> " + InputsTest.kind(() -> l3.token()) + " isLost " + l3.isLost() + " told " + told);
            assertThrows(LockLostException.class, l3::token);
            l3.release();
        }
    }

    static long fences() {
        long n = 0;
        for (int i = 0; i < 3; i++) {
            Matcher m = Pattern.compile("cmdstat_dlock\\.fence:calls=(\\d+)").matcher(q.get(i).cli("INFO", "commandstats"));
            if (m.find()) n += Long.parseLong(m.group(1));
        }
        return n;
    }
}
