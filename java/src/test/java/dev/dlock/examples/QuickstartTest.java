package dev.dlock.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.testkit.Quorum;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** docs/java.md's program is Quickstart.java, byte for byte, and it runs against 5 servers. */
@Timeout(60)
class QuickstartTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/dlock/examples/Quickstart.java");
    private static final Path DOC = Path.of("../docs/java.md");

    @Test
    void theDocsBlockIsTheExampleFile() throws Exception {
        String doc = Files.readString(DOC);
        String marker = "```java example=java/" + SOURCE + "\n";
        int at = doc.indexOf(marker);
        assertTrue(at >= 0, "docs/java.md has no block marked " + marker.strip());
        int from = at + marker.length();
        String block = doc.substring(from, doc.indexOf("```\n", from));
        assertEquals(Files.readString(SOURCE), block);
        assertTrue(block.lines().count() <= 25, "the program is at most 25 lines");
    }

    @Test
    void itRunsAgainstFiveMasters() {
        try (Quorum q = Quorum.start(5)) {
            PrintStream was = System.out;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            try {
                Quickstart.main(q.urls().toArray(new String[0]));
            } finally {
                System.setOut(was);
            }
            assertTrue(out.toString(StandardCharsets.UTF_8).matches("nightly-report held under token [1-9][0-9]*\\n"), out.toString(StandardCharsets.UTF_8));
        }
    }
}
