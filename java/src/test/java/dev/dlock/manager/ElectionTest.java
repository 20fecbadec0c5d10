package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.InvalidArgumentException;
import dev.dlock.Leader;
import dev.dlock.Leadership;
import dev.dlock.LockManager;
import dev.dlock.NoQuorumException;
import dev.dlock.Options;
import dev.dlock.Resource;
import dev.dlock.WrongKindException;
import dev.dlock.testkit.Quorum;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Leader election against real servers (go/election_test.go, client/tests/election.rs):
 * campaign, leader, proclaim, resign, the handoff on resign and on a dead leader's lease end,
 * rising epochs, the lease-loss contract on a frozen majority, bad input refused before any node
 * is asked.
 */
@Timeout(60)
class ElectionTest {
    private static final Duration LEASE = Duration.ofMillis(1500);

    private static Leader leaderOf(Leadership l) {
        return new Leader(l.id(), l.value(), l.epoch());
    }

    /** Whether f completes within ms (its value then read by the caller). */
    private static boolean doneWithin(CompletableFuture<?> f, long ms) throws Exception {
        try {
            f.get(ms, TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        }
    }

    @ParameterizedTest(name = "{0} masters")
    @ValueSource(ints = {1, 5})
    void resignHandsLeadershipToTheNextCandidateAtOnce(int masters) throws Exception {
        try (Quorum q = Quorum.start(masters); LockManager a = Fixtures.manager(q.urls());
                LockManager b = Fixtures.manager(q.urls())) {
            assertEquals(Optional.empty(), a.leader("jobs"), "a leader before any campaign");
            Leadership first = a.campaign("jobs", "10.0.0.1:80", LEASE);
            assertEquals(Optional.of(new Leader(first.id(), "10.0.0.1:80", first.epoch())), b.leader("jobs"));
            CompletableFuture<Leadership> next = b.campaignAsync("jobs", "10.0.0.2:80", LEASE);
            assertFalse(doneWithin(next, 300), "the second candidate was elected while the first leads");
            long resigned = System.nanoTime();
            first.resign();
            Leadership second = next.get(5, TimeUnit.SECONDS);
            long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - resigned);
            assertTrue(took < 1000, "handed over in " + took + " ms, want at once");
            assertTrue(Long.compareUnsigned(second.epoch(), first.epoch()) > 0,
                    second.epoch() + " after " + first.epoch() + ": epochs rise with every leader");
            assertEquals(Optional.of(leaderOf(second)), a.leader("jobs"));
            second.close();
            assertEquals(Optional.empty(), a.leader("jobs"), "a leader after the last resign");
        }
    }

    /** Four managers campaign at once: one leads at a time, each resign elects exactly one more. */
    @Test
    void oneLeaderAmongSeveralCampaignersEpochsRising() throws Exception {
        try (Quorum q = Quorum.start(3)) {
            List<LockManager> managers = new ArrayList<>();
            List<CompletableFuture<Leadership>> campaigns = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    managers.add(Fixtures.manager(q.urls()));
                    campaigns.add(managers.get(i).campaignAsync("one", "candidate-" + i, LEASE));
                }
                long lastEpoch = 0;
                for (int round = 0; round < 4; round++) {
                    Leadership leading = (Leadership) CompletableFuture.anyOf(campaigns.toArray(new CompletableFuture<?>[0]))
                            .get(5, TimeUnit.SECONDS);
                    campaigns.removeIf(CompletableFuture::isDone);
                    Fixtures.sleep(200); // room for a second, wrong, election to show
                    assertTrue(campaigns.stream().noneMatch(CompletableFuture::isDone), "two leaders at once");
                    assertEquals(Optional.of(leaderOf(leading)), managers.get(0).leader("one"));
                    assertTrue(Long.compareUnsigned(leading.epoch(), lastEpoch) > 0, "epochs rise");
                    lastEpoch = leading.epoch();
                    leading.resign();
                }
                assertEquals(Optional.empty(), managers.get(0).leader("one"));
            } finally {
                managers.forEach(LockManager::close);
            }
        }
    }

    /** A leader's process dies (its manager closed: nothing released): the next leads at its lease's end. */
    @Test
    void aDeadLeadersSuccessorLeadsAtTheLeasesEnd() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager b = Fixtures.manager(q.urls())) {
            LockManager a = Fixtures.manager(q.urls());
            Leadership first = a.campaign("dead", "a", LEASE);
            CompletableFuture<Leadership> next = b.campaignAsync("dead", "b", LEASE);
            Fixtures.sleep(200);
            long died = System.nanoTime();
            a.close(); // the watchdog stops; the lock stays held until its TTL
            Leadership second = next.get(5, TimeUnit.SECONDS);
            long after = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - died);
            // The last extension was at most ttl/3 before the death: the lease ran at least 2/3 more.
            assertTrue(after >= LEASE.toMillis() * 2 / 3 - 100 && after < LEASE.toMillis() + 1000,
                    "the successor led " + after + " ms after the death");
            assertTrue(Long.compareUnsigned(second.epoch(), first.epoch()) > 0);
            assertEquals(Optional.of(new Leader(second.id(), "b", second.epoch())), b.leader("dead"));
            second.resign();
        }
    }

    @ParameterizedTest(name = "{0} masters")
    @ValueSource(ints = {1, 3})
    void proclaimChangesTheValueAndKeepsTheEpoch(int masters) throws Exception {
        try (Quorum q = Quorum.start(masters); LockManager m = Fixtures.manager(q.urls())) {
            Leadership leading = m.campaign("svc", "v1", LEASE);
            long epoch = leading.epoch();
            leading.proclaim("v2 with spaces");
            assertEquals("v2 with spaces", leading.value());
            Leader want = new Leader(leading.id(), "v2 with spaces", epoch);
            assertEquals(Optional.of(want), m.leader("svc"));
            Fixtures.sleep(2 * LEASE.toMillis()); // the watchdog extends under the new owner
            assertFalse(leading.isLost(), "lost after proclaim");
            assertEquals(Optional.of(want), m.leader("svc"));
            leading.proclaim("");
            assertEquals(Optional.of(new Leader(leading.id(), "", epoch)), m.leader("svc"));
            assertThrows(InvalidArgumentException.class, () -> leading.proclaim("v".repeat(201)));
            assertEquals("", leading.value());
            leading.resign();
            assertEquals(Optional.empty(), m.leader("svc"));
        }
    }

    /** A frozen majority answers nothing: the listener fires by the renew deadline, before the lease ends. */
    @Test
    void aFrozenMajorityLosesLeadershipAtTheRenewDeadline() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = LockManager.connect(q.urls(),
                Options.builder().timeout(Duration.ofMillis(100)).build())) {
            Leadership leading = m.campaign("frozen", "", LEASE);
            CompletableFuture<Long> lostAt = new CompletableFuture<>();
            leading.onLost(() -> lostAt.complete(System.nanoTime()));
            Fixtures.sleep(700); // an extension or two confirmed
            assertFalse(leading.isLost());
            q.get(0).signal("STOP");
            q.get(1).signal("STOP");
            try {
                long frozenAt = System.nanoTime();
                long deadline = frozenAt + LEASE.toNanos() - LEASE.toNanos() / 10;
                long at = lostAt.get(5, TimeUnit.SECONDS);
                assertTrue(at - deadline < TimeUnit.MILLISECONDS.toNanos(60),
                        "lost " + (at - deadline) / 1_000_000 + " ms after the renew deadline");
                assertTrue(at - frozenAt > LEASE.toNanos() / 3, "lost before the renew deadline could pass");
                assertTrue(leading.isLost());
            } finally {
                q.get(0).signal("CONT");
                q.get(1).signal("CONT");
            }
        }
    }

    @Test
    void cancellingACampaignWithdrawsIt() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager a = Fixtures.manager(q.urls());
                LockManager b = Fixtures.manager(q.urls())) {
            Leadership first = a.campaign("cancel", "a", LEASE);
            CompletableFuture<Leadership> waiting = b.campaignAsync("cancel", "b", LEASE);
            Fixtures.sleep(300);
            assertTrue(waiting.cancel(true));
            Fixtures.sleep(300); // the interrupted round is withdrawn on every node
            first.resign();
            Fixtures.sleep(300);
            assertEquals(Optional.empty(), a.leader("cancel"), "a cancelled campaign was elected");
        }
    }

    @Test
    void leaderRefusesASharedLockAndNeedsAQuorum() {
        try (Quorum q = Quorum.start(3); LockManager m = LockManager.connect(q.urls(),
                Options.builder().timeout(Duration.ofMillis(200)).build())) {
            m.tryAcquire(Resource.shared("readers"), Duration.ofSeconds(10));
            assertThrows(WrongKindException.class, () -> m.leader("readers"));
            q.get(1).close();
            q.get(2).close();
            NoQuorumException e = assertThrows(NoQuorumException.class, () -> m.leader("jobs"));
            assertEquals(2, e.failures().size(), e.getMessage());
        }
    }

    /** Nothing listens on the nodes' port: a call that reached a node could only fail otherwise. */
    @Test
    void badInputIsRefusedBeforeAnyNodeIsAsked() {
        try (LockManager m = LockManager.connect(List.of("redis://127.0.0.1:1"))) {
            assertThrows(InvalidArgumentException.class, () -> m.campaign("", "v", LEASE));
            assertThrows(InvalidArgumentException.class, () -> m.campaign("e", "v".repeat(201), LEASE));
            assertThrows(InvalidArgumentException.class, () -> m.campaign("e", "v", Duration.ZERO));
            assertThrows(InvalidArgumentException.class, () -> m.campaignAsync("", "v", LEASE));
            assertThrows(InvalidArgumentException.class, () -> m.leader(""));
            assertThrows(InvalidArgumentException.class, () -> m.observe(""));
            assertThrows(NoQuorumException.class, () -> m.leader("e"), "a good name does reach the (absent) node");
        }
    }
}
