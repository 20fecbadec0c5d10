package dev.dlock.transport;

import java.util.List;
import java.util.regex.Pattern;

/**
 * A node URL, parsed and checked before anything connects (Go's transport/urls.go; the same
 * answers in every client: conformance/urls.json). Schemes are read in any case. redis://,
 * rediss:// (TLS), unix://: one server, whose query may set db and client_name, nothing else;
 * redis+cluster://, rediss+cluster://: a whole Redis Cluster (port 6379 by default, no query);
 * redis+sentinel://, rediss+sentinel://: the master a group of sentinels names (port 26379 by
 * default, no query). A refused URL's error shows it with its password hidden.
 *
 * @param form what the URL names
 * @param tls whether it speaks TLS
 * @param name the URL with its password hidden: how the node is named in errors
 * @param socket a unix:// server's path ("" otherwise)
 * @param addrs the server, the cluster's seed, or the sentinels
 * @param db a single server's database (the query's db wins over the path's)
 * @param clientName a single server's client_name ("" for none)
 * @param username the URL's user ("" for none)
 * @param password the URL's password ("" for none); never in {@link #toString()}
 * @param hasLogin whether the URL gave a login
 * @param service the master's name a sentinel URL asks for ("" otherwise)
 */
public record Url(Form form, boolean tls, String name, String socket, List<HostPort> addrs, int db,
        String clientName, String username, String password, boolean hasLogin, String service) {

    /** What a URL names. */
    public enum Form {
        /** One server. */
        SINGLE,
        /** A whole Redis Cluster. */
        CLUSTER,
        /** The master a group of sentinels names. */
        SENTINEL
    }

    /**
     * One address of a URL.
     *
     * @param host the host (an IPv6 one without brackets)
     * @param port the port
     */
    public record HostPort(String host, int port) {
        /** @return host:port, an IPv6 host bracketed */
        @Override
        public String toString() {
            return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
    }

    static final int DEFAULT_PORT = 6379;
    static final int SENTINEL_PORT = 26379;

    // user:password@ up to the last @ of the authority; and a userinfo without a colon, which
    // the clients read as a user but Lettuce (redis://PASSWORD@host) as a password: never shown.
    private static final Pattern PASSWORD_IN_URL = Pattern.compile("(?i)^([a-z+]+://[^:/?@]*:)[^/?]*@");
    private static final Pattern USER_ONLY = Pattern.compile("(?i)^([a-z+]+://)[^:/?]+@");
    private static final Pattern PASSWORD_IN_QUERY = Pattern.compile("(?i)([?&]password=)[^&]*");
    static final List<String> SCHEMES = List.of("redis://", "rediss://", "unix://", "redis+cluster://",
            "rediss+cluster://", "redis+sentinel://", "rediss+sentinel://");

    public Url {
        addrs = List.copyOf(addrs);
    }

    /** @return the name: a URL's text never shows its password */
    @Override
    public String toString() {
        return name;
    }

    /** @return the ports the URL names, defaults filled in (none for a socket) */
    public List<Integer> ports() {
        return addrs.stream().map(HostPort::port).toList();
    }

    /**
     * The URL with any password hidden: redis://app:***@host:6379, and a userinfo without a colon
     * as a whole: redis://***@host:6379.
     *
     * @param raw a URL as given
     * @return it, its password replaced by ***
     */
    public static String redact(String raw) {
        String hidden = PASSWORD_IN_URL.matcher(raw).replaceAll("$1***@");
        hidden = USER_ONLY.matcher(hidden).replaceAll("$1***@");
        return PASSWORD_IN_QUERY.matcher(hidden).replaceAll("$1***");
    }

    /**
     * Checks a node URL.
     *
     * @param given the URL as given
     * @return it, parsed
     * @throws BadUrlException naming the URL with the password hidden
     */
    public static Url parse(String given) {
        return UrlParser.parse(given);
    }
}
