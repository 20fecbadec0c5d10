package dev.dlock.adversary;

import static org.junit.jupiter.api.Assertions.*;

import dev.dlock.*;
import dev.dlock.testkit.Quorum;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.*;

/** ADVERSARY (adv-java): argument extremes. Tests named FAILING_* are repros of findings. */
@Timeout(60)
class AdversaryInputsTest {
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

    static String kind(Runnable r) {
        try {
            r.run();
            return "ok";
        } catch (Throwable t) {
            return t.getClass().getSimpleName() + ": " + t.getMessage();
        }
    }

    /** Finding: a Duration past ~292 years (Long nanos) throws ArithmeticException, not InvalidArgumentException. */
    @Test
    void FAILING_hugeDurationsAreInvalidArgumentNotArithmetic() {
        List<Duration> huge = List.of(ChronoUnit.FOREVER.getDuration(), Duration.ofMillis(Long.MAX_VALUE), Duration.ofSeconds(Long.MAX_VALUE));
        List<String> bad = new ArrayList<>();
        for (Duration d : huge) {
            List<Runnable> calls = List.of(
                    () -> locks.acquire("huge", Duration.ofSeconds(1), d),
                    () -> locks.acquireAsync("huge", Duration.ofSeconds(1), d),
                    () -> locks.tryAcquire("huge", d),
                    () -> Options.builder().lockTtl(d),
                    () -> Options.builder().timeout(d),
                    () -> Options.builder().retryDelay(d),
                    () -> Options.builder().maxHold(d),
                    () -> { Lease l = locks.tryAcquire("huge-ext", Duration.ofSeconds(1)); try { l.extend(d); } finally { l.release(); } });
            for (int i = 0; i < calls.size(); i++) {
                String k = kind(calls.get(i));
                System.out.println("huge " + d + " call#" + i + " -> " + k);
                if (!k.startsWith("InvalidArgumentException")) {
                    bad.add(d + " call#" + i + " -> " + k);
                }
            }
        }
        assertTrue(bad.isEmpty(), String.join("\n", bad));
    }

    @Test
    void probeNamesAndNulls() {
        List<Runnable> calls = List.of(
                () -> locks.getLock(null).tryLock(),
                () -> locks.getLock("").tryLock(),
                () -> locks.tryAcquire((String) null, Duration.ofSeconds(1)),
                () -> locks.tryAcquire("x", null),
                () -> locks.acquire("x", Duration.ofSeconds(1), null),
                () -> locks.tryAcquire("x", Duration.ofMillis(-1)),
                () -> locks.tryAcquire("x", Duration.ZERO),
                () -> locks.getSemaphore("sem0", 0).tryLock(),
                () -> locks.getSemaphore("semneg", -1).tryLock(),
                () -> locks.tryAcquire((Resource) null, Duration.ofSeconds(1)),
                () -> { DistributedLock l = locks.getLock("semmax"); l.tryLock(); l.unlock(); },
                () -> { Lease l = locks.tryAcquire(Resource.semaphore("semmax2", Integer.MAX_VALUE), Duration.ofSeconds(1)); l.release(); },
                () -> { Lease l = locks.tryAcquire("nul\0byte", Duration.ofSeconds(1)); l.token(); l.release(); },
                () -> { Lease l = locks.tryAcquire("x".repeat(256), Duration.ofSeconds(1)); l.token(); l.release(); },
                () -> { Lease l = locks.tryAcquire("y".repeat(1 << 20), Duration.ofSeconds(1)); l.token(); l.release(); },
                () -> { try { locks.getLock("w").tryLock(-5, TimeUnit.SECONDS); } catch (InterruptedException e) { throw new RuntimeException(e); } },
                () -> { try { locks.getLock("w2").tryLock(1, -5, TimeUnit.SECONDS); } catch (InterruptedException e) { throw new RuntimeException(e); } },
                () -> { try { locks.getLock("w3").tryLock(0, 1, TimeUnit.MILLISECONDS); } catch (InterruptedException e) { throw new RuntimeException(e); } },
                () -> { try { locks.getLock("w4").tryLock(0, 1, TimeUnit.DAYS); } catch (InterruptedException e) { throw new RuntimeException(e); } },
                () -> { try { locks.getLock("w5").tryLock(0, 25, TimeUnit.HOURS); } catch (InterruptedException e) { throw new RuntimeException(e); } },
                () -> locks.data("redis://u:pw@127.0.0.1:1?foo=bar"),
                () -> locks.observe(""),
                () -> locks.leader(null));
        for (int i = 0; i < calls.size(); i++) {
            System.out.println("probe#" + i + " -> " + kind(calls.get(i)));
        }
    }

    /**
     * Finding: two resource names with different unpaired surrogates encode to the same key ("?"):
     * locks on "\uD800" and "\uDC00" exclude each other on the nodes, while the manager's local
     * queue keeps them apart. Names are not checked for being encodable.
     */
    @Test
    void FAILING_unpairedSurrogatesAliasOneKey() {
        Lease a = locks.tryAcquire("sur\uD800", Duration.ofSeconds(2));
        try {
            String k = kind(() -> locks.tryAcquire("sur\uDC00", Duration.ofSeconds(2)).release());
            assertEquals("ok", k, "two different names, one key on the nodes");
        } finally {
            a.release();
        }
    }

    /** Lock contract: tryLock(Long.MAX_VALUE, unit) — what does the Lock API caller get? */
    @Test
    void probeTryLockForever() throws Exception {
        for (TimeUnit u : TimeUnit.values()) {
            DistributedLock l = locks.getLock("forever-" + u);
            String k;
            try {
                k = "returned " + l.tryLock(Long.MAX_VALUE, u);
                l.unlock();
            } catch (Throwable t) {
                k = t.getClass().getSimpleName() + ": " + t.getMessage();
            }
            System.out.println("tryLock(Long.MAX_VALUE, " + u + ") -> " + k);
        }
    }

    /** A lease shorter than the drift allowance lets through: tryLock(wait, lease) at 3..6 ms. */
    @Test
    void probeTinyLeases() throws Exception {
        for (long ms = 1; ms <= 8; ms++) {
            int t = 0, f = 0;
            List<String> ex = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                DistributedLock l = locks.getLock("tiny");
                try {
                    if (l.tryLock(200, ms, TimeUnit.MILLISECONDS)) {
                        t++;
                        try { l.unlock(); } catch (Throwable e) { ex.add("unlock " + e.getClass().getSimpleName()); }
                    } else {
                        f++;
                    }
                } catch (Throwable e) {
                    ex.add(e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
            System.out.println("lease " + ms + " ms: true=" + t + " false=" + f + " thrown=" + ex.size() + " " + (ex.isEmpty() ? "" : ex.get(0)));
        }
        for (int i = 0; i < 3; i++) {
            System.out.println("after tiny, node " + i + ": " + q.get(i).cli("DLOCK.STATUS", "tiny").replace('\n', ' ') + " waiters: " + q.get(i).cli("DLOCK.WAITERS", "tiny").replace('\n', ' '));
        }
    }

    /** Interrupted on entry to tryLock(time, unit) with the lock free: Lock's javadoc says InterruptedException. */
    @Test
    void probeInterruptedOnEntry() {
        DistributedLock l = locks.getLock("int-entry");
        Thread.currentThread().interrupt();
        String k;
        try {
            k = "returned " + l.tryLock(1, TimeUnit.SECONDS);
        } catch (Throwable t) {
            k = t.getClass().getSimpleName();
        }
        boolean flag = Thread.interrupted();
        System.out.println("tryLock(1s) interrupted on entry -> " + k + ", flag after " + flag);
        if (l.lease().isPresent()) l.unlock();
        Thread.currentThread().interrupt();
        try {
            l.lockInterruptibly();
            k = "returned";
        } catch (Throwable t) {
            k = t.getClass().getSimpleName();
        }
        flag = Thread.interrupted();
        System.out.println("lockInterruptibly interrupted on entry -> " + k + ", flag after " + flag);
        if (l.lease().isPresent()) l.unlock();
        Thread.currentThread().interrupt();
        l.lock();
        flag = Thread.interrupted();
        System.out.println("lock() interrupted on entry -> held " + l.isHeld() + ", flag kept " + flag);
        l.unlock();
    }

    /** Lease with no watchdog past its validity, then unlock(). */
    @Test
    void probeUnlockAfterExpiry() throws Exception {
        DistributedLock l = locks.getLock("expire");
        assertTrue(l.tryLock(0, 100, TimeUnit.MILLISECONDS));
        Thread.sleep(300);
        System.out.println("expired: isHeld=" + l.isHeld() + " isLost=" + l.isLost());
        DistributedLock other = locks.getLock("expire");
        assertTrue(other.tryLock());
        System.out.println("unlock after expiry -> " + kind(l::unlock));
        System.out.println("other still held on nodes: " + q.get(0).cli("DLOCK.STATUS", "expire").replace('\n', ' '));
        other.unlock();
    }
}
