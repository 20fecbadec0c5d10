package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockManager;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Quorum;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A Java set and the Rust CLI's ({@code dlock run a b -- ...}) on 3 masters: each excludes the
 * other through one shared member, and the tokens rise across them.
 */
@Timeout(120)
class SetsInteropTest {
    private static final Path CLI = Path.of("..").toAbsolutePath().normalize().resolve("target/release/dlock");
    private static final Duration TTL = Duration.ofSeconds(10);

    private static Process run(String nodes, String wait, String section, String... resources) throws Exception {
        assertTrue(Files.exists(CLI), CLI + " is missing: run `make build`");
        List<String> cmd = new ArrayList<>(List.of(CLI.toString(), "run"));
        cmd.addAll(List.of(resources));
        cmd.addAll(List.of("--nodes", nodes, "--timeout", "500ms", "--ttl", "10s", "--wait", wait, "--", "sh", "-c", section));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    @Test
    void aJavaSetExcludesTheCliHolderOfOneMemberAndTheReverse() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            String nodes = String.join(",", q.urls());
            Lease set = m.tryAcquireAll(List.of("ia", "ib"), TTL);
            for (String[] asked : List.of(new String[] {"ib"}, new String[] {"ib", "ic"})) {
                Process cli = run(nodes, "0s", "true", asked);
                assertTrue(cli.waitFor(30, TimeUnit.SECONDS));
                assertEquals(3, cli.exitValue(), "the CLI is contended (exit 3) on " + List.of(asked) + " while Java holds");
            }
            long javaToken = set.token();
            set.release();

            Path log = Files.createTempFile("dlock-sets-interop", ".log");
            Process holder = run(nodes, "10s", "echo $DLOCK_TOKENS > " + log + "; sleep 2", "ia", "ib");
            Deployments.eventually(() -> Fixtures.size(log) > 0, "the CLI holds its set");
            assertThrows(LockContendedException.class, () -> m.tryAcquireAll(List.of("ib", "ic"), TTL));
            assertThrows(LockContendedException.class, () -> m.tryAcquire("ia", TTL));
            String[] rust = Files.readString(log).strip().split(" ");
            assertEquals(2, rust.length, "one token per resource");
            assertEquals(rust[0], rust[1], "one token for the set");
            long rustToken = Long.parseLong(rust[0]);
            assertTrue(rustToken > javaToken, rustToken + " after " + javaToken);
            assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, holder.exitValue());
            Lease after = m.acquireAll(List.of("ib", "ia"), TTL, Duration.ofSeconds(5));
            assertTrue(after.token() > rustToken);
            after.release();
            Files.delete(log);
        }
    }
}
