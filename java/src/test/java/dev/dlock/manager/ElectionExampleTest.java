package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.ElectionObserver;
import dev.dlock.Leadership;
import dev.dlock.LockManager;
import dev.dlock.testkit.Quorum;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Election section's example in docs/java.md, run: the block there must be the region
 * between the markers below, word for word (the docs' {@code example=} convention,
 * tests/docs/examples.py), and its output is checked.
 */
@Timeout(60)
class ElectionExampleTest {
    private static final Path DOC = Path.of("..").toAbsolutePath().normalize().resolve("docs/java.md");
    private static final String TAG = "example=java/src/test/java/dev/dlock/manager/ElectionExampleTest.java#election";

    private static void example(LockManager locks) throws Exception {
        // docs: election
        try (ElectionObserver observer = locks.observe("reports")) {
            System.out.println("leader now: " + observer.next().leader());

            AtomicBoolean lost = new AtomicBoolean();
            try (Leadership leading = locks.campaign("reports", "10.0.0.1:8080", Duration.ofSeconds(10))) {
                leading.onLost(() -> lost.set(true)); // stop the work at once: another may lead soon
                System.out.println("leading with epoch " + Long.toUnsignedString(leading.epoch()));
                System.out.println("observed: " + observer.next().leader().orElseThrow().value());
                leading.proclaim("10.0.0.2:8080"); // a new value, the same epoch
                System.out.println("observed: " + observer.next().leader().orElseThrow().value());
            } // close() resigns: the next candidate leads at once
            System.out.println("observed: " + observer.next().leader());
        }
        // docs: end
    }

    @Test
    void theDocumentedExampleRunsAsShown() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager locks = Fixtures.manager(q.urls())) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            PrintStream was = System.out;
            System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8)); // tests run one at a time
            try {
                example(locks);
            } finally {
                System.setOut(was);
            }
            String out = bytes.toString(StandardCharsets.UTF_8);
            assertTrue(out.matches("leader now: Optional.empty\nleading with epoch [1-9][0-9]*\n"
                    + "observed: 10.0.0.1:8080\nobserved: 10.0.0.2:8080\nobserved: Optional.empty\n"), out);
        }
    }

    @Test
    void theDocShowsTheExampleWordForWord() throws Exception {
        String source = Files.readString(Path.of("src/test/java/dev/dlock/manager/ElectionExampleTest.java"));
        String region = source.substring(source.indexOf("// docs: election\n") + "// docs: election\n".length(),
                source.indexOf("        // docs: end"));
        String doc = Files.readString(DOC);
        int at = doc.indexOf(TAG);
        assertTrue(at >= 0, "docs/java.md has no block tagged " + TAG);
        int start = doc.indexOf('\n', at) + 1;
        String block = doc.substring(start, doc.indexOf("```", start));
        assertEquals(dedent(region, 8), block);
    }

    private static String dedent(String text, int by) {
        List<String> lines = text.lines().map(l -> l.length() >= by ? l.substring(by) : l.strip()).toList();
        return lines.stream().collect(Collectors.joining("\n", "", "\n"));
    }
}
