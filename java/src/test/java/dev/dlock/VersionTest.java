package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class VersionTest {
  /** The constant is the pom's project version (tests/versions.rs ties that to the module's). */
  @Test
  void theVersionIsThePackagesOwn() throws IOException {
    String pom = Files.readString(Path.of("pom.xml"));
    int from = pom.indexOf("<artifactId>dlock</artifactId>");
    int start = pom.indexOf("<version>", from) + "<version>".length();
    assertEquals(pom.substring(start, pom.indexOf("</version>", start)), Version.VERSION);
  }
}
