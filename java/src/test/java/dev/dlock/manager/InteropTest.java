package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DistributedLock;
import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockManager;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Quorum;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Java and the other clients on one resource of 3 masters (go/interop_test.go): the Rust CLI
 * ({@code dlock run}) always, the Go example program when {@code go} is on the PATH, Python when
 * python/.venv exists, Node when node/dist does. Sections never overlap and the fencing tokens
 * strictly rise across the languages.
 */
@Timeout(180)
class InteropTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Path CLI = REPO.resolve("target/release/dlock");
    private static final int ROUNDS = 3;
    private static final String SECTION = "echo \"%s $DLOCK_TOKEN start\" >> \"$LOG\"; sleep 0.02; echo \"%s $DLOCK_TOKEN end\" >> \"$LOG\"";

    @Test
    void aJavaHolderExcludesTheRustCliAndTheReverse() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            String nodes = String.join(",", q.urls());
            Lease held = m.tryAcquire("shared-res", Duration.ofSeconds(10));
            Process cli = cli(nodes, "shared-res", "0s", "true").start();
            assertTrue(cli.waitFor(30, TimeUnit.SECONDS));
            assertEquals(3, cli.exitValue(), "the CLI is contended (exit 3) while Java holds");
            long javaToken = held.token();
            held.release();
            Path log = Files.createTempFile("dlock-interop", ".log");
            Process holder = cli(nodes, "shared-res", "10s", "echo $DLOCK_TOKEN > " + log + "; sleep 2").start();
            Deployments.eventually(() -> size(log) > 0, "the CLI holds");
            assertThrows(LockContendedException.class, () -> m.tryAcquire("shared-res", Duration.ofSeconds(10)));
            long rustToken = Long.parseLong(Files.readString(log).strip());
            assertTrue(rustToken > javaToken, rustToken + " after " + javaToken);
            assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, holder.exitValue());
            Lease after = m.acquire("shared-res", Duration.ofSeconds(10), Duration.ofSeconds(5));
            assertTrue(after.token() > rustToken);
            after.release();
            Files.delete(log);
        }
    }

    @Test
    void everyClientPresentTakesTurnsWithRisingTokens() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager m = Fixtures.manager(q.urls())) {
            String nodes = String.join(",", q.urls());
            Path log = Files.createTempFile("dlock-interop", ".log");
            Set<String> expected = new TreeSet<>(List.of("java", "rust"));
            List<ProcessBuilder> others = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                others.add(rounds(cli(nodes, "interop", "60s", SECTION.formatted("rust", "rust"))));
            }
            Path go = goExample();
            if (go != null) {
                expected.add("go");
                for (int i = 0; i < 2; i++) {
                    ProcessBuilder p = rounds(new ProcessBuilder(go.toString(), "interop", "sh", "-c", SECTION.formatted("go", "go")));
                    p.environment().put("DLOCK_NODES", nodes);
                    others.add(p);
                }
            }
            Path python = REPO.resolve("python/.venv/bin/python");
            if (Files.exists(python)) {
                expected.add("python");
                others.add(new ProcessBuilder(python.toString(), "-c", PYTHON, nodes, log.toString(), "" + ROUNDS));
            } else {
                System.out.println("InteropTest: Python left out: " + python + " is missing (make python-venv)");
            }
            Path nodeIndex = REPO.resolve("node/dist/esm/index.js");
            if (Files.exists(nodeIndex)) {
                expected.add("node");
                others.add(new ProcessBuilder("node", "--input-type=module", "-e", NODE, "file://" + nodeIndex, nodes, log.toString(), "" + ROUNDS));
            } else {
                System.out.println("InteropTest: Node left out: " + nodeIndex + " is missing (make node-test builds it)");
            }
            List<Process> running = new ArrayList<>();
            for (ProcessBuilder p : others) {
                p.environment().put("LOG", log.toString());
                running.add(p.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
            }
            List<CompletableFuture<Void>> javas = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                javas.add(CompletableFuture.runAsync(() -> javaRounds(m, log)));
            }
            for (CompletableFuture<Void> j : javas) {
                j.get(120, TimeUnit.SECONDS);
            }
            for (Process p : running) {
                assertTrue(p.waitFor(120, TimeUnit.SECONDS));
                assertEquals(0, p.exitValue());
            }
            assertEquals(expected, check(Files.readAllLines(log), (others.size() + 2) * ROUNDS));
            Files.delete(log);
        }
    }

    private static void javaRounds(LockManager m, Path log) {
        DistributedLock lock = m.getLock("interop");
        for (int i = 0; i < ROUNDS; i++) {
            lock.lock();
            try {
                append(log, "java " + lock.token() + " start");
                Fixtures.sleep(20);
                append(log, "java " + lock.token() + " end");
            } finally {
                lock.unlock();
            }
        }
    }

    // Every section ends before the next starts, tokens rise: which clients took part.
    private static Set<String> check(List<String> lines, int sections) {
        assertEquals(2 * sections, lines.size(), String.join("\n", lines));
        Set<String> who = new TreeSet<>();
        long last = 0;
        for (int i = 0; i < lines.size(); i += 2) {
            String[] start = lines.get(i).split(" ");
            String[] end = lines.get(i + 1).split(" ");
            assertTrue(start[2].equals("start") && end[2].equals("end") && start[0].equals(end[0]) && start[1].equals(end[1]),
                    "overlap: " + lines.get(i) + " / " + lines.get(i + 1));
            long token = Long.parseLong(start[1]);
            assertTrue(token > last, "token " + token + " after " + last);
            last = token;
            who.add(start[0]);
        }
        return who;
    }

    private static ProcessBuilder cli(String nodes, String resource, String wait, String section) {
        assertTrue(Files.exists(CLI), CLI + " is missing: run `make build`");
        return new ProcessBuilder(CLI.toString(), "run", resource, "--nodes", nodes, "--timeout", "500ms", "--ttl", "10s",
                "--wait", wait, "--", "sh", "-c", section);
    }

    private static ProcessBuilder rounds(ProcessBuilder p) {
        List<String> cmd = new ArrayList<>(List.of("sh", "-c", "for i in $(seq " + ROUNDS + "); do \"$@\" || exit $?; done", "sh"));
        cmd.addAll(p.command());
        ProcessBuilder out = new ProcessBuilder(cmd);
        out.environment().putAll(p.environment());
        return out;
    }

    // The Go example program (go/examples/quorum), built when go is on the PATH.
    private static Path goExample() throws IOException, InterruptedException {
        Path out = Files.createTempDirectory("dlock-go").resolve("quorum");
        Process p;
        try {
            p = new ProcessBuilder("go", "build", "-o", out.toString(), "./examples/quorum").directory(REPO.resolve("go").toFile())
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            System.out.println("InteropTest: Go left out: no go on the PATH (" + e.getMessage() + ")");
            return null;
        }
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0, "go build: " + said);
        return out;
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static void append(Path log, String line) {
        try {
            Files.writeString(log, line + "\n", StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static final String PYTHON = """
            import sys, time
            from dlock import LockManager
            nodes, log, rounds = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
            with LockManager(nodes, timeout=0.5) as locks:
                for _ in range(rounds):
                    with locks.lock("interop", ttl=10.0, wait=60.0) as lock:
                        with open(log, "a") as f:
                            f.write(f"python {lock.token()} start\\n")
                        time.sleep(0.02)
                        with open(log, "a") as f:
                            f.write(f"python {lock.token()} end\\n")
            """;

    private static final String NODE = """
            import { appendFileSync } from "node:fs";
            const { LockManager } = await import(process.argv[1]);
            const [nodes, log, rounds] = [process.argv[2].split(","), process.argv[3], Number(process.argv[4])];
            const locks = new LockManager(nodes, { timeout: 500 });
            for (let i = 0; i < rounds; i++) {
              await locks.using("interop", { ttl: 10000, wait: 60000 }, async (lock) => {
                appendFileSync(log, "node " + (await lock.token()) + " start\\n");
                await new Promise((r) => setTimeout(r, 20));
                appendFileSync(log, "node " + (await lock.token()) + " end\\n");
              });
            }
            await locks.close();
            """;
}
