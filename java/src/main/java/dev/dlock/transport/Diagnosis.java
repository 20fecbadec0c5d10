package dev.dlock.transport;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.NoSuchFileException;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLException;

/**
 * Why a node could not be used, in the words every dlock client uses (conformance/errors.json;
 * Go's transport/diagnosis.go): what failed, then what to do. The failure puts the node's name
 * in front. No text here carries a credential: a server's own refusal of a login is replaced,
 * never quoted.
 */
public final class Diagnosis {
    /** How the Java client is given a user and password (the engine's option names it so). */
    public static final String LOGIN = "user:password@ in the URL, or the credentials option (user, password)";
    /** How the Java client is given TLS files. */
    public static final String TLS_FILES = "the TLS files option";
    /** Nothing listens on the port. */
    public static final String REFUSED = "connection refused: is the server running, and is the port right?";
    /** No unix socket at the path. */
    public static final String NO_SOCKET = "no such socket: is the server running, and is the path right?";
    /** A plain connection a TLS port reset (or closed) before it answered. */
    public static final String PLAIN_TO_TLS = "connection reset during the handshake: is it a TLS port? then use rediss://";
    /** The server wants a login and got none. */
    public static final String NO_AUTH = "authentication required (NOAUTH): give a user and password (" + LOGIN + ")";
    /** The server refused the login given. */
    public static final String WRONG_PASS =
            "authentication failed (wrong user or password): give the right user and password (" + LOGIN + ")";
    /** How a server refuses a database it does not have (Redis, Valkey). */
    static final String NO_SUCH_DATABASE = "DB index is out of range";

    private Diagnosis() {}

    /**
     * An error reply as the server wrote it ("TRYAGAIN ..."), but for a refused login, which says
     * what to do instead.
     *
     * @param reply the error reply
     * @return it in words
     */
    public static String explainReply(RedisError reply) {
        String why = refusedLogin(reply.text());
        return why != null ? why : reply.text();
    }

    /** A missing or a wrong password (Redis 6's codes, and the older servers' ERR); null if not. */
    static String refusedLogin(String said) {
        if (said == null) {
            return null;
        }
        if (said.startsWith("NOAUTH")) {
            return NO_AUTH;
        }
        if (said.startsWith("WRONGPASS") || said.startsWith("ERR invalid password")
                || said.startsWith("ERR AUTH <password> called without any password")) {
            return WRONG_PASS;
        }
        return null;
    }

    /** The first cause of err (err included) of type c, or null. */
    static <T extends Throwable> T find(Throwable err, Class<T> c) {
        for (Throwable e = err; e != null; e = e.getCause()) {
            if (c.isInstance(e)) {
                return c.cast(e);
            }
            if (e.getCause() == e) {
                break;
            }
        }
        return null;
    }

    /** err without the future's wrappers. */
    static Throwable unwrap(Throwable err) {
        Throwable e = err;
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** The error reply err carries, if any (a handshake's, or one met identifying). */
    static String replyOf(Throwable err) {
        Identity.ReplyException r = find(err, Identity.ReplyException.class);
        if (r != null) {
            return r.reply().text();
        }
        RedisCommandExecutionException x = find(err, RedisCommandExecutionException.class);
        return x == null ? null : x.getMessage();
    }

    static boolean isTimeout(Throwable err) {
        return find(err, TimeoutException.class) != null || find(err, RedisCommandTimeoutException.class) != null
                || find(err, SocketTimeoutException.class) != null
                || find(err, io.netty.channel.ConnectTimeoutException.class) != null;
    }

    /** The other end closed or reset the connection. */
    static boolean dropped(Throwable err) {
        if (find(err, ClosedChannelException.class) != null) {
            return true;
        }
        for (Throwable e = err; e != null; e = e.getCause()) {
            String m = String.valueOf(e.getMessage());
            if (m.contains("Connection reset") || m.contains("Connection closed") || m.contains("connection closed")) {
                return true;
            }
            if (e.getCause() == e) {
                break;
            }
        }
        return false;
    }

    /** A duration as the clients write it: 500ms, 2s, 1.5s, 1m0s. */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + "ms";
        }
        if (ms < 60_000) {
            return (ms % 1000 == 0) ? (ms / 1000) + "s" : String.valueOf(ms / 1000.0).replaceAll("0+$", "") + "s";
        }
        long s = ms / 1000;
        return s / 60 + "m" + s % 60 + "s";
    }

    /** The text of what went wrong, for "cannot connect: ..." (a deadline as the time allowed). */
    static String describe(Throwable err, Duration within) {
        if (isTimeout(err)) {
            return "timed out after " + format(within);
        }
        Throwable e = unwrap(err);
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == e ? String.valueOf(e.getMessage()) : e.getMessage() + ": " + root.getMessage();
    }

    /** Why a connection could not be made (dialled, TLS, AUTH, SELECT), within the time it had. */
    static String cannotConnect(Throwable err, boolean tls, Duration within) {
        String why = explain(err, tls, within);
        return why != null ? why : "cannot connect: " + describe(err, within);
    }

    /** Why a connection gave no usable reply; fresh: one made for this call, no reply on it yet. */
    static String broken(Throwable err, boolean tls, boolean fresh) {
        if (fresh && !tls && dropped(err)) {
            return PLAIN_TO_TLS;
        }
        String why = refusedLogin(replyOf(err));
        return why != null ? why : "connection broken: " + describe(err, Duration.ZERO);
    }

    /** What to do about a failure a user can fix, if err is one; null if not. */
    static String explain(Throwable err, boolean tls, Duration within) {
        Identity.Refusal refusal = find(err, Identity.Refusal.class);
        if (refusal != null) {
            return refusal.getMessage();
        }
        String login = refusedLogin(replyOf(err));
        if (login != null) {
            return login;
        }
        boolean dialling = find(err, ConnectException.class) != null;
        if (isTimeout(err)) {
            return tls && !dialling ? "no TLS handshake within " + format(within)
                    + ": a port without TLS? then use redis:// (or the server is paused or overloaded)" : null;
        }
        if (dialling) {
            String m = String.valueOf(find(err, ConnectException.class).getMessage());
            return m.contains("No such file") ? NO_SOCKET : REFUSED;
        }
        if (find(err, NoSuchFileException.class) != null) {
            return NO_SOCKET;
        }
        if (!tls && dropped(err)) {
            return PLAIN_TO_TLS;
        }
        return tls ? tlsFailure(err) : null;
    }

    /** A certificate refused, by either side; null if err is no TLS failure. */
    static String tlsFailure(Throwable err) {
        SSLException ssl = find(err, SSLException.class);
        CertificateException cert = find(err, CertificateException.class);
        if (ssl == null && cert == null) {
            return null;
        }
        String text = (ssl != null ? ssl : cert).getMessage();
        String all = text + (cert != null ? " " + cert.getMessage() : "");
        if (all.contains("PKIX path") || all.contains("unable to find valid certification path")) {
            return "TLS: " + text + ": the server's certificate is not signed by a CA given (" + TLS_FILES
                    + "; without one, the JDK's)";
        }
        if (all.contains("No subject alternative") || all.contains("No name matching")) {
            return "TLS: " + text + ": the server's certificate is not for the host in the URL";
        }
        if (all.contains("certificate_required") || all.contains("bad_certificate")) {
            return "TLS: " + text + ": the server wants a client certificate: give a certificate and its key ("
                    + TLS_FILES + ")";
        }
        return "TLS: " + text + ": check the CA, the client certificate and the host name";
    }

    /** Why a cluster's master gave no answer: a refusal as everywhere, anything else as it came. */
    static String clusterFailure(Throwable err, Duration within) {
        Identity.Refusal refusal = find(err, Identity.Refusal.class);
        if (refusal != null) {
            return refusal.getMessage();
        }
        String login = refusedLogin(replyOf(err));
        if (login != null) {
            return login;
        }
        if (find(err, ConnectException.class) != null && !isTimeout(err)) {
            return REFUSED;
        }
        return describe(err, within);
    }

    /**
     * Why connecting to database db failed, with refused set for a refusal connecting again
     * cannot cure: credentials or permission refused, a database the server does not have.
     */
    static NodeFailure connectFailure(String node, Throwable err, boolean tls, Duration within, int db) {
        String said = replyOf(err);
        Throwable cause = unwrap(err);
        if (said != null && said.contains(NO_SUCH_DATABASE)) {
            return new NodeFailure(node, "database " + db + " refused by the server (" + said + ")", false,
                    NodeFailure.Refused.DATABASE, cause);
        }
        boolean setup = find(err, Identity.Final.class) != null
                || (said != null && (said.startsWith("NOPERM") || refusedLogin(said) != null));
        return new NodeFailure(node, cannotConnect(err, tls, within), false,
                setup ? NodeFailure.Refused.SETUP : NodeFailure.Refused.NONE, cause);
    }

    /** Whether err is an I/O failure (for the caller's retry on a broken connection). */
    static boolean io(Throwable err) {
        return find(err, IOException.class) != null || dropped(err);
    }
}
