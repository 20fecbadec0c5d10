package dev.dlock;

import java.util.Objects;

/**
 * Why one node did not count towards a quorum: its name (the URL, password hidden) and the reason
 * (Go's {@code transport.Failure}, Rust's {@code NodeFailure}).
 *
 * @param node the node's name, as errors name it (never with a password)
 * @param reason what failed, in the clients' one voice
 * @param noReply the call got no reply within its time (as opposed to a refused connection, a
 *     broken one or an error reply); for a server-side wait, also how the end of a wait the
 *     server answered late looks ({@code Replies.classify} tells the two apart)
 * @param refused a refusal met while a connection was set up that connecting again cannot cure
 *     (conformance/README.md): final for the call that met it
 */
public record NodeFailure(String node, String reason, boolean noReply, Refusal refused) {
  /** What {@link NodeFailure#refused} says. */
  public enum Refusal {
    /** Nothing final: asking again may succeed. */
    NONE,
    /** Credentials or permission refused (NOAUTH, WRONGPASS, NOPERM). */
    SETUP,
    /** A database the server does not have: the caller's invalid argument. */
    DATABASE
  }

  /** Checks the fields: a failure always names its node and reason. */
  public NodeFailure {
    Objects.requireNonNull(node, "node");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(refused, "refused");
  }

  /** A plain failure: asking again may cure it. */
  public static NodeFailure of(String node, String reason) {
    return new NodeFailure(node, reason, false, Refusal.NONE);
  }

  /** A call that got no reply within its time. */
  public static NodeFailure noReply(String node, String reason) {
    return new NodeFailure(node, reason, true, Refusal.NONE);
  }

  /** The node's reply that the resource is held as another kind. */
  boolean isWrongKind() {
    return reason.contains("WRONGKIND");
  }

  /**
   * A node's error reply refusing an argument of the request, {@code ERR <argument> must be <what
   * it takes>} as every argument check of the module words it (src/wire/errors.rs; a TTL over the
   * node's dlock.max-ttl-ms, say). Asking again cannot change it.
   */
  boolean isRefusedArgument() {
    return reason.startsWith("ERR ") && reason.contains(" must be ");
  }

  /** The node and why, as messages list it. */
  @Override
  public String toString() {
    return node + ": " + reason;
  }
}
