package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.InvalidArgumentException;
import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockLostException;
import dev.dlock.LockManager;
import dev.dlock.Options;
import dev.dlock.Resource;
import dev.dlock.ResourceSet;
import dev.dlock.testkit.Deployments;
import dev.dlock.transport.Cluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sets across slots on a real Redis Cluster of three masters (go/sets_cluster_test.go): taken
 * group by group, each resource on the master of its slot under its group's token; a later group
 * held elsewhere gives back the earlier ones; release frees everything; one group lost loses the
 * set, extended or watched.
 */
@Timeout(120)
class SetsClusterTest {
    private static final Duration TTL = Duration.ofSeconds(10);
    private static Deployments.Cluster c;
    private static LockManager m;
    private static LockManager other;

    @BeforeAll
    static void start() {
        c = Deployments.cluster();
        Options o = Options.builder().timeout(Duration.ofSeconds(2)).replicaAck(Options.ReplicaAck.OFF).build();
        m = LockManager.connect(List.of(c.url()), o);
        other = LockManager.connect(List.of(c.url()), o);
    }

    @AfterAll
    static void stop() {
        m.close();
        other.close();
        c.close();
    }

    /** The masters holding key (its slot's master only, when held). */
    private static List<String> holders(String key) {
        return c.nodes().stream().map(n -> n.cli("DLOCK.STATUS", key)).filter(st -> st.contains("owner")).toList();
    }

    private static void freeOnMasters(String... keys) {
        Deployments.eventually(() -> Arrays.stream(keys).allMatch(k -> holders(k).isEmpty()), Arrays.toString(keys) + " free");
    }

    /** Given back within 3 s, long before their 10 s TTL would free them. */
    private static void givenBack(String... keys) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (!Arrays.stream(keys).allMatch(k -> holders(k).isEmpty())) {
            assertTrue(System.nanoTime() < deadline, Arrays.toString(keys) + " still held");
            Fixtures.sleep(50);
        }
    }

    /** keys in the order a set takes them on a Cluster: slot, then bytes. */
    private static List<String> bySlot(String... keys) {
        List<String> sorted = new ArrayList<>(List.of(keys));
        sorted.sort(Comparator.<String>comparingInt(Cluster::keySlot)
                .thenComparing((a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8))));
        return sorted;
    }

    @Test
    void takenWholeEachResourceUnderItsGroupsTokenAndReleasedEverywhere() {
        List<String> keys = List.of("acct:1", "{ledger}:in", "acct:2", "{ledger}:out");
        Lease set = m.tryAcquireAll(ResourceSet.of(Resource.exclusive("acct:1"), Resource.shared("{ledger}:in"),
                Resource.exclusive("acct:2"), Resource.exclusive("{ledger}:out")), TTL);
        List<Long> tokens = set.tokens();
        assertEquals(4, tokens.size());
        for (int i = 0; i < keys.size(); i++) {
            List<String> held = holders(keys.get(i));
            assertEquals(1, held.size(), keys.get(i) + " on its slot's master only");
            assertTrue(held.get(0).contains("token\n" + tokens.get(i) + "\n"), keys.get(i) + ": " + held);
            assertEquals(i == 1, held.get(0).startsWith("kind\nshared"), keys.get(i) + ": " + held);
        }
        assertEquals(tokens.get(1), tokens.get(3), "one slot ({ledger}): one group, one token");
        assertThrows(InvalidArgumentException.class, set::token, "one token of a set across 3 slots");
        assertTrue(set.validity().toMillis() > 0 && !set.isLost());
        set.extend();
        set.release();
        freeOnMasters(keys.toArray(new String[0]));
        set.release(); // again: nothing
    }

    @Test
    void aLaterGroupHeldElsewhereFailsTheCallAndGivesBackTheEarlierOnes() {
        List<String> order = bySlot("x:1", "x:2", "x:3");
        Lease blocker = other.tryAcquire(order.get(2), TTL);
        LockContendedException e = assertThrows(LockContendedException.class, () -> m.tryAcquireAll(List.of("x:1", "x:2", "x:3"), TTL));
        assertEquals(order.get(2), e.resource(), "the group that failed");
        givenBack(order.get(0), order.get(1));
        long started = System.nanoTime();
        assertThrows(LockContendedException.class, () -> m.acquireAll(List.of("x:1", "x:2", "x:3"), TTL, Duration.ofMillis(700)));
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(5), "the wait is one deadline for every group");
        givenBack(order.get(0), order.get(1));
        blocker.release();
    }

    @Test
    void oneGroupLostLosesTheSetAndGivesBackTheRest() throws Exception {
        Lease set = m.tryAcquireAll(List.of("m:1", "m:2", "m:3"), TTL);
        CountDownLatch told = new CountDownLatch(1);
        set.onLost(told::countDown);
        c.nodes().forEach(n -> n.cli("DEL", "m:2")); // only m:2's master has it
        assertThrows(LockLostException.class, set::extend);
        assertTrue(told.await(10, TimeUnit.SECONDS) && set.isLost());
        givenBack("m:1", "m:2", "m:3");
        set.release();
    }

    @Test
    void oneGroupLostWhileWatchedLosesTheSet() throws Exception {
        Lease set = m.tryAcquireAll(List.of("w:1", "w:2", "w:3"), Duration.ofMillis(1500));
        CountDownLatch told = new CountDownLatch(1);
        set.onLost(told::countDown);
        set.watch();
        c.nodes().forEach(n -> n.cli("DEL", "w:3"));
        assertTrue(told.await(10, TimeUnit.SECONDS), "the loss was never told");
        freeOnMasters("w:1", "w:2", "w:3");
        set.release();
    }

    @Test
    void aMultiLockAcrossSlotsLocksAndUnlocksEveryGroup() {
        var lock = m.getMultiLock("ml:1", "ml:2", "ml:3");
        lock.lock();
        assertEquals(3, lock.tokens().size());
        assertThrows(LockContendedException.class, () -> other.tryAcquire("ml:2", TTL));
        lock.unlock();
        freeOnMasters("ml:1", "ml:2", "ml:3");
    }
}
