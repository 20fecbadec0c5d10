package dev.dlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class VersionTest {
  @Test
  void theVersionIsTheModulesOwn() {
    assertEquals("0.5.0", Version.VERSION);
  }
}
