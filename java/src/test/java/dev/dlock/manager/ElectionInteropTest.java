package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.ElectionObserver;
import dev.dlock.ElectionObserver.Change;
import dev.dlock.Leader;
import dev.dlock.Leadership;
import dev.dlock.LockManager;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Quorum;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Java and the Rust CLI on one election of 3 masters (docs/cli.md: {@code dlock elect},
 * {@code leader}, {@code observe}): a Java observer sees a leader the CLI elected, with the epoch
 * its command was given; the CLI sees a Java leader, and its campaign waits for the Java
 * leader's resignation, then leads with a larger epoch.
 */
@Timeout(90)
class ElectionInteropTest {
    private static final Path CLI = Path.of("..").toAbsolutePath().normalize().resolve("target/release/dlock");

    private static ProcessBuilder cli(List<String> urls, String... args) {
        List<String> cmd = new ArrayList<>(List.of(CLI.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder p = new ProcessBuilder(cmd).redirectErrorStream(true);
        p.environment().put("DLOCK_NODES", String.join(",", urls));
        p.environment().put("DLOCK_TIMEOUT", "500ms");
        return p;
    }

    private static String output(Process p) throws Exception {
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the CLI did not end");
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }

    private static String read(Path log) {
        try {
            return Files.readString(log).strip();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aJavaObserverSeesALeaderTheCliElected() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls());
                ElectionObserver o = m.observe("from-cli")) {
            assertEquals(Optional.empty(), ElectionWatchTest.next(o, 5000).leader());
            Path log = Files.createTempFile("dlock-elect", ".log");
            Process elect = cli(q.urls(), "elect", "from-cli", "--value", "cli-host", "--ttl", "5s", "--",
                    "sh", "-c", "echo \"$DLOCK_EPOCH\" > " + log + "; sleep 1").start();
            Change led = ElectionWatchTest.next(o, 10_000);
            Leader leader = led.leaderOrThrow().orElseThrow();
            assertEquals("cli-host", leader.value());
            Deployments.eventually(() -> !read(log).isEmpty(), "the CLI's command runs");
            assertEquals(read(log), Long.toUnsignedString(leader.epoch()), "the epoch the command was given");
            assertEquals(Optional.of(leader), m.leader("from-cli"));
            assertEquals(0, elect.waitFor(30, TimeUnit.SECONDS) ? elect.exitValue() : -1, output(elect));
            ElectionWatchTest.expect("the CLI resigned", ElectionWatchTest.next(o, 5000), Optional.empty());
            Files.delete(log);
        }
    }

    @Test
    void theCliSeesAJavaLeaderAndLeadsAfterIt() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            Leadership leading = m.campaign("from-java", "java-host", Duration.ofSeconds(5));
            String line = Long.toUnsignedString(leading.epoch()) + " " + leading.id() + " java-host";
            assertEquals(line, output(cli(q.urls(), "leader", "from-java").start()).strip());
            Process observe = cli(q.urls(), "observe", "from-java", "--count", "2").start();
            Path log = Files.createTempFile("dlock-elect", ".log");
            Process elect = cli(q.urls(), "elect", "from-java", "--value", "cli-host", "--",
                    "sh", "-c", "echo \"$DLOCK_EPOCH\" > " + log).start();
            Fixtures.sleep(500);
            assertTrue(read(log).isEmpty(), "the CLI led while Java leads");
            assertFalse(leading.isLost());
            leading.resign();
            assertEquals(0, elect.waitFor(30, TimeUnit.SECONDS) ? elect.exitValue() : -1, output(elect));
            long cliEpoch = Long.parseUnsignedLong(read(log));
            assertTrue(Long.compareUnsigned(cliEpoch, leading.epoch()) > 0, cliEpoch + " after " + leading.epoch());
            String seen = output(observe);
            assertTrue(seen.startsWith(line + "\n"), "the CLI observer saw first: " + seen);
            Files.delete(log);
        }
    }
}
