package dev.dlock;

/**
 * Every error a dlock call raises (Go's {@code *dlock.Error}, Rust's {@code Error}): one base so a
 * caller may catch them all, a subclass per case it acts on. Messages are one line in the words
 * every dlock client uses (conformance/errors.json): which lock or node, what failed, what to do;
 * never a password.
 */
public class DlockException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error with its message. */
  public DlockException(String message) {
    super(message);
  }

  /** An error with its message and its cause. */
  public DlockException(String message, Throwable cause) {
    super(message, cause);
  }

  /** {@code n} with its noun, singular for one: "1 attempt", "3 nodes". */
  static String count(long n, String noun) {
    return n == 1 ? "1 " + noun : n + " " + noun + "s";
  }

  /** A string quoted as the other clients quote a resource (Go's %q, JSON.stringify). */
  static String quote(String s) {
    StringBuilder out = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
