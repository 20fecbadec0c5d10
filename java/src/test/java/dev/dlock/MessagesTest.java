package dev.dlock;

import dev.dlock.transport.NodeFailure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The words of conformance/errors.json that the engine makes (the table itself runs against real
 * servers, in the I/O step): counts agree with their nouns, each message names the lock or node,
 * no password.
 */
class MessagesTest {
  private static final NodeFailure REFUSED =
      NodeFailure.of("redis://127.0.0.1:1", "connection refused: is the server running, and is the port right?");

  @Test
  void contendedCountsItsAttempts() {
    DlockException e = AttemptError.of(AttemptError.Kind.CONTENDED).toException("r", 2, 1);
    assertEquals("lock \"r\" is held by another owner (1 attempt)", e.getMessage());
    assertTrue(e instanceof LockContendedException);
  }

  @Test
  void noQuorumNamesEachFailedNode() {
    DlockException e = AttemptError.of(AttemptError.Kind.NO_QUORUM, List.of(REFUSED)).toException("r", 1, 1);
    assertEquals("no quorum for \"r\": 1 node needed, 1 failed: redis://127.0.0.1:1: connection refused: "
        + "is the server running, and is the port right?", e.getMessage());
    assertEquals(List.of(REFUSED), ((NoQuorumException) e).failures());
  }

  @Test
  void aRefusedArgumentNamesTheNode() {
    NodeFailure f = NodeFailure.of("redis://h:1", "ERR ttl-ms must be an integer from 1 to 60000 (dlock.max-ttl-ms), got '3600000'");
    DlockException e = AttemptError.of(AttemptError.Kind.INVALID_ARGUMENT, List.of(f)).toException("r", 1, 1);
    assertTrue(e instanceof InvalidArgumentException);
    assertTrue(e.getMessage().startsWith("lock \"r\": redis://h:1 refused an argument: ERR ttl-ms must be"), e.getMessage());
    NodeFailure db = new NodeFailure("redis://h:1", "database 99999 refused by the server (ERR DB index is out of range)",
        false, NodeFailure.Refused.DATABASE, null);
    assertEquals("lock \"r\": redis://h:1: database 99999 refused by the server (ERR DB index is out of range)",
        AttemptError.of(AttemptError.Kind.INVALID_ARGUMENT, List.of(db)).toException("r", 1, 1).getMessage());
  }

  @Test
  void wrongKindQuotesTheNode() {
    NodeFailure f = NodeFailure.of("redis://h:1", "WRONGKIND the resource is a lock, asked as a semaphore with LIMIT 3");
    assertEquals("lock \"r\" is held as another kind on redis://h:1: WRONGKIND the resource is a lock, asked as a "
        + "semaphore with LIMIT 3", AttemptError.of(AttemptError.Kind.WRONG_KIND, List.of(f)).toException("r", 1, 1).getMessage());
  }

  @Test
  void aStaleTokenIsALossWithItsTokenUnsigned() {
    StaleTokenException e = new StaleTokenException("r", "gate", -1L);
    assertTrue(e instanceof LockLostException);
    assertTrue(e.getMessage().contains("newer token than 18446744073709551615"), e.getMessage());
  }

  @Test
  void aTtlLeavingNoValidityNamesTheShortest() {
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
        () -> Checks.checkLease(Duration.ofMillis(2), Timing.Drift.DEFAULT));
    assertTrue(e.getMessage().startsWith("ttl must be at least 3 ms: a shorter one leaves no validity after the clock "
        + "drift allowance (1% of the TTL + 2 ms), got 2 ms"), e.getMessage());
    Checks.checkLease(Duration.ofMillis(3), Timing.Drift.DEFAULT);
  }

  @Test
  void badInputIsRefusedInTheSameWords() {
    assertEquals("the resource name must not be empty",
        assertThrows(InvalidArgumentException.class, () -> Checks.checkName("")).getMessage());
    assertTrue(assertThrows(InvalidArgumentException.class, () -> Checks.checkWait(Duration.ofMillis(315_360_000_001L)))
        .getMessage().contains("at most 315360000000 ms (ten years, the longest the nodes take)"));
    Checks.checkWait(Checks.MAX_WAIT);
    assertThrows(InvalidArgumentException.class, () -> Kind.semaphore(0));
    assertThrows(InvalidArgumentException.class, () -> Kind.semaphore(Kind.MAX_LIMIT + 1));
  }
}
