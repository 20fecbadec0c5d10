package dev.dlock.transport;

import java.util.Objects;

/**
 * Why one node gave no usable answer (Go's {@code transport.Failure}, Rust's {@code NodeFailure}):
 * the node's name (its URL, password hidden) and the reason in the clients' one voice
 * (conformance/errors.json). The transport's only exception to its callers: a call's future
 * fails with it.
 */
public final class NodeFailure extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * A refusal met while a connection was set up that connecting again cannot cure
     * (conformance/README.md): final for the call that met it.
     */
    public enum Refused {
        /** No such refusal. */
        NONE,
        /** Credentials or permission refused (NOAUTH, WRONGPASS, NOPERM). */
        SETUP,
        /** A database the server does not have. */
        DATABASE
    }

    private final String node;
    private final String reason;
    private final boolean noReply;
    private final Refused refused;

    /**
     * A failure.
     *
     * @param node the node's name
     * @param reason why, in words
     * @param noReply the call got no reply within its time (for a server-side wait, also how a
     *     wait the server answered late looks)
     * @param refused a refusal connecting again cannot cure, or {@link Refused#NONE}
     * @param cause what the driver threw, if anything (its text is not in the message)
     */
    public NodeFailure(String node, String reason, boolean noReply, Refused refused, Throwable cause) {
        super(node + ": " + reason, cause);
        this.node = Objects.requireNonNull(node);
        this.reason = Objects.requireNonNull(reason);
        this.noReply = noReply;
        this.refused = Objects.requireNonNull(refused);
    }

    /**
     * A failure with nothing behind it.
     *
     * @param node the node's name
     * @param reason why, in words
     */
    public NodeFailure(String node, String reason) {
        this(node, reason, false, Refused.NONE, null);
    }

    /**
     * A plain failure: asking again may cure it.
     *
     * @param node the node's name
     * @param reason why, in words
     * @return the failure
     */
    public static NodeFailure of(String node, String reason) {
        return new NodeFailure(node, reason);
    }

    /**
     * A call that got no reply within its time.
     *
     * @param node the node's name
     * @param reason why, in words
     * @return the failure
     */
    public static NodeFailure noReply(String node, String reason) {
        return new NodeFailure(node, reason, true, Refused.NONE, null);
    }

    /** @return the node and why, as messages list it ("node: reason", no class name) */
    @Override
    public String toString() {
        return node + ": " + reason;
    }

    /** @return the node's name (its URL, password hidden) */
    public String node() {
        return node;
    }

    /** @return why, in words */
    public String reason() {
        return reason;
    }

    /** @return the call got no reply within its time */
    public boolean noReply() {
        return noReply;
    }

    /** @return a refusal connecting again cannot cure, or {@link Refused#NONE} */
    public Refused refused() {
        return refused;
    }

    /**
     * This failure under another node's name, its reason prefixed (a sentinel group naming its
     * master, a cluster naming its master).
     *
     * @param name the outer node's name
     * @param prefix what goes before the reason ("" for nothing)
     * @return the renamed failure
     */
    public NodeFailure as(String name, String prefix) {
        return new NodeFailure(name, prefix + reason, noReply, refused, getCause());
    }
}
