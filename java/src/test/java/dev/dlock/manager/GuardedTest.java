package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DataConnection;
import dev.dlock.Lease;
import dev.dlock.LockLostException;
import dev.dlock.LockManager;
import dev.dlock.StaleTokenException;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Guarded writes through DLOCK.GUARD (go/guarded_test.go): the current token passes, a stale one is refused. */
@Timeout(60)
class GuardedTest {
    @Test
    void theCurrentTokenWritesAStaleOneIsRefusedAndLosesTheLease() {
        try (Quorum q = Quorum.start(3); RedisProcess dataServer = RedisProcess.start(RedisProcess.Flavour.plain());
                LockManager m = Fixtures.manager(q.urls()); DataConnection data = m.data(dataServer.url())) {
            Lease old = m.tryAcquire("report", Duration.ofSeconds(10));
            assertEquals("OK", old.guarded(data, "report:gate", "SET", "report", "v1"));
            for (RedisProcess s : q.servers()) {
                s.cli("DLOCK.RELEASE", "report", old.owner()); // its lease ends behind its back (a pause, say)
            }
            Lease next = m.tryAcquire("report", Duration.ofSeconds(10));
            assertTrue(next.token() > old.token());
            assertEquals("OK", next.guarded(data, "report:gate", "SET", "report", "v2"));
            StaleTokenException e = assertThrows(StaleTokenException.class,
                    () -> old.guarded(data, "report:gate", "SET", "report", "v1-late"));
            assertTrue(e.getMessage().contains("has seen a newer token than " + old.token()), e.getMessage());
            assertTrue(old.isLost());
            assertEquals("v2\n", dataServer.cli("GET", "report"));
            assertThrows(LockLostException.class, () -> old.guarded(data, "report:gate", "SET", "report", "x"),
                    "a lease known lost sends nothing");
            next.release();
        }
    }
}
