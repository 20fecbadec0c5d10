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

/** docs/java.md's sets program is Transfer.java, byte for byte, and it runs against 3 servers. */
@Timeout(60)
class TransferTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/dlock/examples/Transfer.java");

    @Test
    void theDocsBlockIsTheExampleFile() throws Exception {
        String doc = Files.readString(Path.of("../docs/java.md"));
        String marker = "```java example=java/" + SOURCE + "\n";
        int at = doc.indexOf(marker);
        assertTrue(at >= 0, "docs/java.md has no block marked " + marker.strip());
        int from = at + marker.length();
        assertEquals(Files.readString(SOURCE), doc.substring(from, doc.indexOf("```\n", from)));
    }

    @Test
    void itRunsAgainstThreeMastersAndLeavesNothingHeld() {
        try (Quorum q = Quorum.start(3)) {
            PrintStream was = System.out;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            try {
                Transfer.main(q.urls().toArray(new String[0]));
            } finally {
                System.setOut(was);
            }
            String said = out.toString(StandardCharsets.UTF_8);
            assertTrue(said.matches("moved 10 from accounts:1 to accounts:2 under token [1-9][0-9]*\\n"), said);
            for (String k : new String[] {"accounts:1", "accounts:2", "ledger"}) {
                q.servers().forEach(s -> assertEquals("\n", s.cli("DLOCK.STATUS", k), k + " free"));
            }
        }
    }
}
