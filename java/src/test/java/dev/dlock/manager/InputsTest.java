package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.*;

import dev.dlock.*;
import dev.dlock.testkit.Quorum;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.*;

/** Arguments at their extremes, refused before anything is sent or answered as the Lock interface says: from the adversary's repros (docs/java.md). */
@Timeout(60)
class InputsTest {
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

    /** A Duration past ~292 years (Long nanos) is InvalidArgumentException in every check, never ArithmeticException. */
    @Test
    void hugeDurationsAreInvalidArgument() {
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

    /**
     * Two resource names with different unpaired surrogates would encode to one key ("?"): names,
     * election names and leader values that are not valid UTF-16 are refused before anything is
     * sent; a pair (a valid character) is taken.
     */
    @Test
    void unpairedSurrogatesAreRefusedBeforeAnythingIsSent() throws Exception {
        for (String bad : List.of("sur\uD800", "sur\uDC00", "\uDC00\uD800", "x\uD800y")) {
            String k = kind(() -> locks.tryAcquire(bad, Duration.ofSeconds(2)).release());
            assertTrue(k.startsWith("InvalidArgumentException: the resource name must be valid UTF-16"), k);
            assertTrue(kind(() -> locks.getLock(bad).tryLock()).startsWith("InvalidArgumentException"));
            assertTrue(kind(() -> locks.tryAcquireAll(List.of("ok", bad), Duration.ofSeconds(2))).startsWith("InvalidArgumentException"));
            assertTrue(kind(() -> locks.observe(bad)).startsWith("InvalidArgumentException"));
            assertTrue(kind(() -> { try { locks.campaign("elect-sur", bad, Duration.ofSeconds(2)); } catch (InterruptedException e) { throw new RuntimeException(e); } })
                    .startsWith("InvalidArgumentException"));
        }
        assertEquals("", q.get(0).cli("KEYS", "*sur*").trim(), "nothing was sent");
        Lease pair = locks.tryAcquire("sur\uD83D\uDE00", Duration.ofSeconds(2));
        pair.release();
    }

    /** tryLock(Long.MAX_VALUE, unit), Java's "wait for ever", waits the nodes' longest wait: on a free lock, true. */
    @Test
    void tryLockForeverIsTheLongestWait() throws Exception {
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
            assertEquals("returned true", k);
        }
    }

    /**
     * Tiny leases through tryLock(wait, lease): one that can leave no validity after the drift
     * allowance (under 3 ms) is refused up front (InvalidArgumentException); one that is granted
     * with its validity spent answers false, never ValidityExpiredException; nothing stays queued.
     */
    @Test
    void tinyLeasesAreRefusedOrAnsweredFalse() throws Exception {
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
            if (ms < 3) {
                assertEquals(10, ex.size());
                assertTrue(ex.stream().allMatch(e -> e.startsWith("InvalidArgumentException: ttl must be at least 3 ms")), ex.toString());
            } else { // a lease of a few ms may be lost by the time unlock() runs: the contract's LockLostException
                assertEquals(List.of(), ex.stream().filter(e -> !e.equals("unlock LockLostException")).toList());
            }
        }
        for (int i = 0; i < 3; i++) {
            assertEquals("", q.get(i).cli("DLOCK.WAITERS", "tiny").trim());
        }
    }

    /** A lease with no watchdog past its validity: lost; unlock() says so and leaves the next holder's lock alone. */
    @Test
    void unlockAfterExpiryIsLostAndLeavesTheNextHolder() throws Exception {
        DistributedLock warm = locks.getLock("expire-warm"); // a 100 ms lease must not pay the first connections
        assertTrue(warm.tryLock());
        warm.unlock();
        DistributedLock l = locks.getLock("expire");
        assertTrue(l.tryLock(0, 100, TimeUnit.MILLISECONDS));
        Thread.sleep(300);
        System.out.println("expired: isHeld=" + l.isHeld() + " isLost=" + l.isLost());
        DistributedLock other = locks.getLock("expire");
        assertTrue(other.tryLock());
        String k = kind(l::unlock);
        System.out.println("unlock after expiry -> " + k);
        assertTrue(k.startsWith("LockLostException"), k);
        assertTrue(other.isHeld());
        other.unlock();
    }
}
