package dev.dlock.transport;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How nodes made from URLs are reached beyond what their URLs say (Go's transport/connect.go):
 * the connect timeout, TLS for rediss:// nodes, the nodes' ACL user and password (for URLs that
 * name no login), and the sentinels' own login. The library reads no environment: an
 * application passes what it read (as the Go client's FromEnv option does, in the engine).
 *
 * @param timeout bounds connecting (the handshake and login included)
 * @param tls the PEM files rediss:// nodes are reached with ({@link TlsFiles#NONE}: the JDK's
 *     roots, no client certificate)
 * @param username the user for nodes whose URL names no login ("" for the default user)
 * @param password the password for nodes whose URL names no login ("" for none)
 * @param sentinelUsername the sentinels' own user
 * @param sentinelPassword the sentinels' own password
 */
public record Config(Duration timeout, TlsFiles tls, String username, String password,
        String sentinelUsername, String sentinelPassword) {

    /**
     * The PEM files of TLS: a CA bundle (replacing the JDK's roots) and a client certificate and
     * its key for mutual TLS; null leaves one out.
     *
     * @param ca the CA bundle, or null
     * @param cert the client certificate, or null
     * @param key the client certificate's key (PKCS#8, unencrypted), or null
     */
    public record TlsFiles(Path ca, Path cert, Path key) {
        /** No files: the JDK's roots, no client certificate. */
        public static final TlsFiles NONE = new TlsFiles(null, null, null);

        /**
         * Checks the files now, as every client does when the manager is made.
         *
         * @return these files
         * @throws IllegalArgumentException naming a file missing or unreadable, or a certificate
         *     without its key (the engine's invalid argument)
         */
        public TlsFiles check() {
            if ((cert == null) != (key == null)) {
                throw new IllegalArgumentException("a client certificate needs its key and the reverse (certificate "
                        + cert + ", key " + key + ")");
            }
            for (Path p : new Path[] {ca, cert, key}) {
                if (p != null && !Files.isReadable(p)) {
                    throw new IllegalArgumentException("TLS file " + p + " cannot be read");
                }
            }
            return this;
        }
    }

    public Config {
        Objects.requireNonNull(timeout);
        tls = tls == null ? TlsFiles.NONE : tls;
        username = Objects.requireNonNullElse(username, "");
        password = Objects.requireNonNullElse(password, "");
        sentinelUsername = Objects.requireNonNullElse(sentinelUsername, "");
        sentinelPassword = Objects.requireNonNullElse(sentinelPassword, "");
    }

    /**
     * A config of the timeout alone.
     *
     * @param timeout bounds connecting
     * @return the config
     */
    public static Config of(Duration timeout) {
        return new Config(timeout, TlsFiles.NONE, "", "", "", "");
    }

    /**
     * @param t the new timeout
     * @return this config with the timeout t
     */
    public Config withTimeout(Duration t) {
        return new Config(t, tls, username, password, sentinelUsername, sentinelPassword);
    }

    /**
     * @param files the TLS files
     * @return this config with those TLS files
     */
    public Config withTls(TlsFiles files) {
        return new Config(timeout, files, username, password, sentinelUsername, sentinelPassword);
    }

    /**
     * @param user the user
     * @param pass the password
     * @return this config with that login for nodes whose URL names none
     */
    public Config withCredentials(String user, String pass) {
        return new Config(timeout, tls, user, pass, sentinelUsername, sentinelPassword);
    }

    /**
     * @param user the sentinels' user
     * @param pass the sentinels' password
     * @return this config with the sentinels' login
     */
    public Config withSentinelCredentials(String user, String pass) {
        return new Config(timeout, tls, username, password, user, pass);
    }

    /** @return the config without its passwords: a secret is never in a message or a log */
    @Override
    public String toString() {
        return "Config[timeout=" + timeout + ", tls=" + tls + ", username=" + username + ", password="
                + (password.isEmpty() ? "" : "***") + ", sentinelUsername=" + sentinelUsername
                + ", sentinelPassword=" + (sentinelPassword.isEmpty() ? "" : "***") + "]";
    }
}
