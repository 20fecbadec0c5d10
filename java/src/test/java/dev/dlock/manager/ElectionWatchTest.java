package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.ElectionObserver;
import dev.dlock.ElectionObserver.Change;
import dev.dlock.Leader;
import dev.dlock.Leadership;
import dev.dlock.LockManager;
import dev.dlock.ManagerClosedException;
import dev.dlock.NoQuorumException;
import dev.dlock.Options;
import dev.dlock.Resource;
import dev.dlock.WrongKindException;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Observing an election against real servers (go/election_watch_test.go): the leader first, then
 * every change once and in order (resign, takeover, proclaim, a lease that ran out), through a
 * node restart; errors when too few nodes answer or the name is a shared lock; the listener form.
 */
@Timeout(60)
class ElectionWatchTest {
    private static final Duration LEASE = Duration.ofMillis(1500);

    static Change next(ElectionObserver o, long ms) throws InterruptedException {
        return o.next(Duration.ofMillis(ms)).orElseThrow(() -> new AssertionError("no change within " + ms + " ms"));
    }

    static void expect(String what, Change c, Optional<Leader> want) {
        assertTrue(c != null, what + ": no change in time");
        assertEquals(Optional.empty(), c.error(), what);
        assertEquals(want, c.leader(), what);
    }

    static Optional<Leader> of(Leadership l) {
        return Optional.of(new Leader(l.id(), l.value(), l.epoch()));
    }

    @ParameterizedTest(name = "{0} masters")
    @ValueSource(ints = {1, 3})
    void anObserverSeesEveryChangeInOrder(int masters) throws Exception {
        try (Quorum q = Quorum.start(masters); LockManager a = Fixtures.manager(q.urls());
                // b's leader stops extending after max hold, as a frozen process would: its lease ends.
                LockManager b = LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofMillis(500))
                        .maxHold(Duration.ofSeconds(2)).build())) {
            Leadership first = a.campaign("obs", "a", LEASE);
            ElectionObserver o = a.observe("obs");
            expect("first", next(o, 5000), of(first));
            CompletableFuture<Leadership> next = b.campaignAsync("obs", "b", LEASE);
            Fixtures.sleep(300);
            first.resign();
            Leadership second = next.get(5, TimeUnit.SECONDS);
            Change c = next(o, 5000);
            if (c.error().isEmpty() && c.leader().isEmpty()) {
                c = next(o, 5000); // a handoff may pass through nobody while the grant is committed
            }
            expect("after resign", c, of(second));
            second.proclaim("b2");
            expect("after proclaim", next(o, 5000), of(second));
            assertEquals("b2", second.value());
            expect("after the lease ran out", next(o, 6000), Optional.empty());
            assertEquals(Optional.empty(), o.next(Duration.ofMillis(500)), "a change nothing made");
            o.close();
            assertThrows(IllegalStateException.class, () -> o.next(Duration.ofSeconds(1)));
        }
    }

    /**
     * A node restarted (its locks gone with it) is asked again once it is back: after the restart,
     * another node is killed for good, so a leader can only be seen through the restarted one.
     */
    @Test
    void anObserverSurvivesANodeRestart() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = LockManager.connect(q.urls(),
                Options.builder().timeout(Duration.ofMillis(200)).build())) {
            ElectionObserver o = m.observe("restart");
            expect("first", next(o, 5000), Optional.empty());
            int port = q.get(0).port;
            q.get(0).signal("KILL");
            try (RedisProcess back = RedisProcess.start(RedisProcess.Flavour.plain(), port)) {
                assertEquals(port, back.port);
                Deployments.eventually(() -> Fixtures.info(back, "blocked_clients") >= 1, "the observer asks again");
                q.get(1).close();
                Leadership leading = m.campaign("restart", "x", LEASE);
                expect("elected on the restarted node and the third", next(o, 5000), of(leading));
                leading.resign();
                expect("resigned", next(o, 5000), Optional.empty());
                o.close();
            }
        }
    }

    /** A leader that stops extending (a raw grant nobody extends) is seen gone at its lease's end. */
    @Test
    void anExpiredLeaderIsSeenGone() throws Exception {
        try (Quorum q = Quorum.start(1); LockManager m = Fixtures.manager(q.urls())) {
            long epoch = Long.parseLong(q.get(0).cli("DLOCK.ACQUIRE", "exp", "c0ffee:0 host-a", "400").strip());
            ElectionObserver o = m.observe("exp");
            expect("first", next(o, 5000), Optional.of(new Leader("c0ffee:0", "host-a", epoch)));
            long started = System.nanoTime();
            expect("at the lease's end", next(o, 5000), Optional.empty());
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertTrue(took < 700, "seen gone after " + took + " ms, want at the lease's end (400 ms)");
            o.close();
        }
    }

    @Test
    void tooFewNodesOrASharedLockAreSaid() throws Exception {
        try (Quorum q = Quorum.start(3)) {
            // Not a try resource: closing it is part of the test.
            LockManager m = LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofMillis(200)).build());
            m.tryAcquire(Resource.shared("readers"), Duration.ofSeconds(10));
            try (ElectionObserver shared = m.observe("readers")) {
                Change c = next(shared, 5000);
                assertTrue(c.error().orElseThrow() instanceof WrongKindException, c.toString());
                assertThrows(WrongKindException.class, c::leaderOrThrow);
            }
            ElectionObserver o = m.observe("gone");
            expect("first", next(o, 5000), Optional.empty());
            q.get(1).close();
            q.get(2).close();
            Change c = next(o, 5000);
            assertTrue(c.error().orElseThrow() instanceof NoQuorumException, c.toString());
            // Closing the manager ends the observer: the down nodes' loops at once, the live
            // node's as its pending OBSERVE is answered (here by a grant).
            m.close();
            q.get(0).cli("DLOCK.ACQUIRE", "gone", "c0ffee:0", "10000");
            assertThrows(ManagerClosedException.class, () -> o.next(Duration.ofSeconds(2)));
        }
    }

    @Test
    void aListenerHearsEveryChangeInOrder() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            LinkedBlockingQueue<Change> heard = new LinkedBlockingQueue<>();
            try (ElectionObserver o = m.observe("listened", heard::add)) {
                expect("first", heard.poll(5, TimeUnit.SECONDS), Optional.empty());
                Leadership leading = m.campaign("listened", "l", LEASE);
                expect("elected", heard.poll(5, TimeUnit.SECONDS), of(leading));
                leading.proclaim("l2");
                expect("proclaimed", heard.poll(5, TimeUnit.SECONDS), of(leading));
                leading.resign();
                expect("resigned", heard.poll(5, TimeUnit.SECONDS), Optional.empty());
                assertEquals(o.name(), "listened");
            }
            assertEquals(null, heard.poll(300, TimeUnit.MILLISECONDS), "a change after close");
        }
    }
}
