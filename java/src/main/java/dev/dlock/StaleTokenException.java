package dev.dlock;

/**
 * A guarded write was refused: a newer holder already wrote through the gate with a larger token.
 * Nothing changed, and the lock is lost (so it is a {@link LockLostException} too).
 */
public class StaleTokenException extends LockLostException {
  private static final long serialVersionUID = 1L;

  private final String gate;
  private final long token;

  /** {@code resource}'s write through {@code gate} with {@code token} (unsigned) refused. */
  public StaleTokenException(String resource, String gate, long token) {
    super(resource, "lock " + quote(resource) + " was lost: gate " + quote(gate)
        + " has seen a newer token than " + Long.toUnsignedString(token) + "; nothing was written");
    this.gate = gate;
    this.token = token;
  }

  /** The gate's key. */
  public String gate() {
    return gate;
  }

  /** This lock's token, below the gate's: unsigned 64 bits ({@link Long#toUnsignedString}). */
  public long token() {
    return token;
  }
}
