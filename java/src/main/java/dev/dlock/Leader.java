package dev.dlock;

import java.util.Objects;

/**
 * Who leads an election (docs/election.md).
 *
 * @param id the leader's candidate id (unique per campaign)
 * @param value the value it campaigned with or last proclaimed
 * @param epoch the fencing token of its leadership, larger than every earlier leader's: unsigned
 *     64 bits ({@link Long#toUnsignedString}, {@link Long#compareUnsigned})
 */
public record Leader(String id, String value, long epoch) {
  /** Checks the id and value are given. */
  public Leader {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(value, "value");
  }

  @Override
  public String toString() {
    return "Leader[id=" + id + ", value=" + value + ", epoch=" + Long.toUnsignedString(epoch) + "]";
  }
}
