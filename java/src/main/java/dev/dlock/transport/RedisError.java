package dev.dlock.transport;

/**
 * An error reply, as the server sent it ({@code "WRONGKIND ..."}, {@code "MOVED 3999 h:p"}): a
 * value in its command's place, so that one command's error does not fail the rest of a
 * pipeline (Go's {@code transport.Error}).
 *
 * @param text the reply's text, its code first
 */
public record RedisError(String text) {
    /** The reply's text, as {@link #text()}. */
    @Override
    public String toString() {
        return text;
    }
}
