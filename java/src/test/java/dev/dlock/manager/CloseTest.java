package dev.dlock.adversary;

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

/** ADVERSARY (adv-java): close, URLs, same node twice. Tests named FAILING_* are repros of findings. */
@Timeout(60)
class AdversaryCloseTest {
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
     * Finding: LockManager.close() leaves a lock() caller waiting on the nodes retrying the closed
     * nodes for ever (every retry pause), and the callers queued behind it locally parked for ever.
     */
    @Test
    void FAILING_closeAnswersAWaitingLock() throws Exception {
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
        }
    }

    /** Finding: after the manager's close an observer hands out a NoQuorum change ("is it a TLS port?") instead of ManagerClosedException. */
    @Test
    void FAILING_observerAfterManagerClose() throws Exception {
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
        assertTrue(thrown instanceof ManagerClosedException, "docs/java.md: after the manager's close, next throws ManagerClosedException; got " + seen + " / " + thrown);
    }

    /** acquire(res, ttl, wait=0) on a free resource, on fresh managers (first lock of each). */
    @Test
    void FAILING_acquireZeroWaitOnAFreeLock() {
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
        assertTrue(bad.isEmpty(), bad.toString());
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

    /** Same server twice: localhost vs 127.0.0.1, trailing slash, db=0. */
    @Test
    void sameNodeTwice() {
        int p = q.get(0).port;
        List<List<String>> lists = List.of(
                List.of("redis://127.0.0.1:" + p, "redis://localhost:" + p, q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "/", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "?db=0", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "/0", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "REDIS://127.0.0.1:" + p, q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "?db=1", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://[::ffff:127.0.0.1]:" + p, q.get(1).url()));
        for (List<String> urls : lists) {
            String r;
            try (LockManager m = LockManager.connect(urls, Options.builder().timeout(Duration.ofMillis(500)).build())) {
                DistributedLock l = m.getLock("twice");
                try {
                    r = "tryLock " + l.tryLock();
                    l.unlock();
                } catch (Throwable e) {
                    r = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
                DistributedLock l2 = m.getLock("twice2");
                long t0 = System.nanoTime();
                try {
                    l2.lock();
                    r += " | lock held";
                    l2.unlock();
                } catch (Throwable e) {
                    r += " | lock " + e.getClass().getSimpleName() + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms";
                }
            } catch (Throwable e) {
                r = "connect " + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            System.out.println("twice " + urls.subList(0, 2) + " -> " + r);
            assertFalse(r.startsWith("tryLock true"), "one server counted twice: " + urls + " " + r);
        }
    }

    /** Finding: a password-only userinfo (redis://PASSWORD@host, Lettuce's own form) is shown in messages and nodes(). */
    @Test
    void FAILING_passwordsNeverShown() throws Exception {
        String pw = "S3cretPW";
        int p = q.get(0).port;
        List<String> bad = List.of(
                "redis://u:" + pw + "@127.0.0.1:99999", "redis://u:" + pw + "@127.0.0.1:-1", "redis://u:" + pw + "@[::1",
                "redis://u:" + pw + "@127.0.0.1:1?foo=bar", "redis://u:" + pw + "@127.0.0.1:1?db=x", "http://u:" + pw + "@h:1",
                "redis://u:" + pw + "%zz@h:1", "redis://u:" + pw + "@h:1 x", "redis+sentinel://u:" + pw + "@h:1",
                "redis+sentinel://u:" + pw + "@h:1/m?db=2", "unix://u:" + pw + "@/tmp/x.sock?foo=1", "redis://u:" + pw + "@h:1#frag",
                "redis://u:" + pw + "@h:1/99x", "redis://u:" + pw + "@", "redis://" + pw + "@h:abc", "redis://" + pw + "@h:1", "rediss+cluster://u:" + pw + "@h:1/3",
                "redis://u:" + pw + "@127.0.0.1:" + p, "redis://u:" + pw + "@127.0.0.1:" + p);
        List<String> leaks = new ArrayList<>();
        for (int i = 0; i < bad.size(); i++) {
            List<String> urls = i == bad.size() - 2 ? List.of(bad.get(i), bad.get(i + 1)) : List.of(bad.get(i));
            try (LockManager m = LockManager.connect(urls, Options.builder().timeout(Duration.ofMillis(300)).build())) {
                String s = m.nodes() + " " + m.options() + " " + m.getLock("pw") + " " + m;
                if (s.contains(pw)) leaks.add("toString " + urls + ": " + s);
                try {
                    DistributedLock l = m.getLock("pw");
                    l.tryLock();
                    s = l.toString() + l.lease().map(Object::toString).orElse("");
                    if (s.contains(pw)) leaks.add("lease " + s);
                    l.unlock();
                } catch (Throwable e) {
                    check(e, pw, leaks, urls);
                }
            } catch (Throwable e) {
                check(e, pw, leaks, urls);
            }
            if (i == bad.size() - 2) break;
        }
        // a real server with a wrong password
        try (LockManager m = LockManager.connect(List.of(q.get(0).url()), Options.builder().timeout(Duration.ofMillis(300)).credentials("default", pw).build())) {
            String s = m.options().toString();
            if (s.contains(pw)) leaks.add("options " + s);
            try { m.getLock("pw").tryLock(); } catch (Throwable e) { check(e, pw, leaks, List.of("login")); }
        }
        System.out.println("password leaks: " + leaks);
        assertTrue(leaks.isEmpty(), leaks.toString());
    }

    static void check(Throwable e, String pw, List<String> leaks, List<String> urls) {
        System.out.println("pw probe " + urls.get(0).replace(pw, "***") + " -> " + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace(pw, "<<LEAK>>"));
        for (Throwable t = e; t != null; t = t.getCause()) {
            java.io.StringWriter sw = new java.io.StringWriter();
            t.printStackTrace(new java.io.PrintWriter(sw));
            if (String.valueOf(t.getMessage()).contains(pw) || t.toString().contains(pw) || sw.toString().contains(pw)) {
                leaks.add(urls.get(0).replace(pw, "***") + " -> " + t.getClass().getName());
                return;
            }
        }
    }
}
