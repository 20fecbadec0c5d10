package dev.dlock.transport;

/**
 * A node URL refused before anything connects (conformance/urls.json); its message names the
 * URL with the password hidden. The engine reports it as its invalid-argument error.
 */
public final class BadUrlException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** @param message the refusal, password hidden */
    public BadUrlException(String message) {
        super(message);
    }
}
