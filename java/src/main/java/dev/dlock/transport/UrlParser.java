package dev.dlock.transport;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/** How {@link Url#parse} reads each form (Go's urls.go, function for function). */
final class UrlParser {
    private static final Pattern DIGITS = Pattern.compile("^[0-9]+$");
    /** The highest database number a server's databases setting (an int) can make. */
    static final long MAX_DB = (1L << 31) - 2;

    private UrlParser() {}

    /** A URL's parts as they are read. */
    private static final class Parts {
        Url.Form form = Url.Form.SINGLE;
        boolean tls;
        String name = "";
        String socket = "";
        List<Url.HostPort> addrs = new ArrayList<>();
        int db;
        String clientName = "";
        String username = "";
        String password = "";
        boolean hasLogin;
        String service = "";

        Url url() {
            return new Url(form, tls, name, socket, addrs, db, clientName, username, password, hasLogin, service);
        }
    }

    /** How a refusal is worded for one URL. */
    private record Bad(String what, String name) {
        BadUrlException of(String why) {
            return new BadUrlException(what + " URL " + quote(name) + ": " + why);
        }
    }

    static Url parse(String given) {
        String raw = lowerScheme(given);
        String name = Url.redact(raw);
        if (raw.startsWith("redis+cluster://") || raw.startsWith("rediss+cluster://")) {
            return parseCluster(raw, name, new Bad("cluster", name));
        }
        if (raw.startsWith("redis+sentinel://") || raw.startsWith("rediss+sentinel://")) {
            return parseSentinel(raw, name, new Bad("sentinel", name));
        }
        if (raw.startsWith("unix://")) {
            return parseSocket(raw, name, new Bad("node", name));
        }
        if (raw.startsWith("redis://") || raw.startsWith("rediss://")) {
            return parseServer(raw, name, new Bad("node", name));
        }
        String what = raw.contains("://") ? "an unknown scheme" : "no scheme";
        int last = Url.SCHEMES.size() - 1;
        throw new BadUrlException("node URL " + quote(name) + " has " + what + ": use "
                + String.join(", ", Url.SCHEMES.subList(0, last)) + " or " + Url.SCHEMES.get(last));
    }

    static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /** REDIS://h is redis://h. */
    private static String lowerScheme(String raw) {
        int at = raw.indexOf("://");
        return at < 0 ? raw : raw.substring(0, at).toLowerCase(Locale.ROOT) + raw.substring(at);
    }

    private static int port(String text, Bad bad) {
        if (!DIGITS.matcher(text).matches()) {
            throw bad.of("bad port " + quote(text));
        }
        long n = text.length() > 6 ? Long.MAX_VALUE : Long.parseLong(text);
        if (n < 1 || n > 65535) {
            throw bad.of("port " + text + " out of range 1-65535");
        }
        return (int) n;
    }

    /** Reads host[:port] or [v6][:port]. */
    private static Url.HostPort address(String text, int def, Bad bad) {
        String host = text;
        String rest = "";
        if (text.startsWith("[")) {
            int end = text.indexOf(']');
            if (end < 0) {
                throw bad.of("bad address " + quote(text));
            }
            host = text.substring(1, end);
            rest = text.substring(end + 1);
            if (!rest.isEmpty() && !rest.startsWith(":")) {
                throw bad.of("bad address " + quote(text));
            }
        } else if (text.contains(":")) {
            int i = text.indexOf(':');
            host = text.substring(0, i);
            rest = text.substring(i);
        }
        if (host.isEmpty() || host.contains("[") || host.contains("]")) {
            throw bad.of("bad address " + quote(text) + " (a host is required)");
        }
        return new Url.HostPort(host, rest.isEmpty() ? def : port(rest.substring(1), bad));
    }

    /** Reads a single server's query: db and client_name, nothing else. */
    private static void query(Parts u, String text, Bad bad) {
        Map<String, List<String>> values = new LinkedHashMap<>();
        for (String pair : text.split("&", -1)) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String key = unescape(eq < 0 ? pair : pair.substring(0, eq), true, bad);
            String value = eq < 0 ? "" : unescape(pair.substring(eq + 1), true, bad);
            values.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
        }
        for (Map.Entry<String, List<String>> e : values.entrySet()) {
            if (!e.getKey().equals("db") && !e.getKey().equals("client_name")) {
                throw bad.of("query parameter " + quote(e.getKey())
                        + " is not supported (only db, client_name; timeouts and TLS settings are options)");
            }
            if (e.getValue().size() > 1) { // which one would count is nobody's guess
                throw bad.of("query parameter " + quote(e.getKey()) + " given twice");
            }
        }
        if (values.containsKey("db")) {
            u.db = database(values.get("db").get(0), "db", bad);
        }
        u.clientName = values.getOrDefault("client_name", List.of("")).get(0);
    }

    /** A database number a server could have (digits, 0 to MAX_DB), as every client checks it. */
    private static int database(String text, String what, Bad bad) {
        if (!DIGITS.matcher(text).matches()) {
            throw bad.of("bad " + what + " " + quote(text));
        }
        long n = text.length() > 12 ? Long.MAX_VALUE : Long.parseLong(text);
        if (n > MAX_DB) {
            throw bad.of("database " + text + ": a database number is from 0 to " + MAX_DB
                    + " (below the server's databases)");
        }
        return (int) n;
    }

    /** Percent-decoding; plus: '+' is a space (a query), else itself (a path or a login). */
    private static String unescape(String text, boolean plus, Bad bad) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '%') {
                if (i + 2 >= text.length()) {
                    throw bad.of("bad escape in " + (plus ? "query" : "login or name"));
                }
                int hi = Character.digit(text.charAt(i + 1), 16);
                int lo = Character.digit(text.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw bad.of("bad escape in " + (plus ? "query" : "login or name"));
                }
                out.write(hi * 16 + lo);
                i += 2;
            } else if (c == '+' && plus) {
                out.write(' ');
            } else {
                byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                out.write(b, 0, b.length);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** Reads user:password (or :password, or user) before the @ of a URL. */
    private static void readLogin(Parts u, String userinfo, boolean needPassword, Bad bad) {
        u.hasLogin = true;
        int colon = userinfo.indexOf(':');
        if (needPassword && colon < 0) {
            throw bad.of("a user name needs a password (user:password@)");
        }
        u.username = unescape(colon < 0 ? userinfo : userinfo.substring(0, colon), false, bad);
        u.password = colon < 0 ? "" : unescape(userinfo.substring(colon + 1), false, bad);
    }

    // A fragment means nothing to a node: refused rather than dropped, as a misspelt parameter is.
    private static final String FRAGMENT = "a fragment (#...) is not supported: a node URL ends with its path or query";

    /** [before, query or null]: the query after ?; a # is refused. */
    private static String[] splitQuery(String rest, Bad bad) {
        if (rest.indexOf('#') >= 0) {
            throw bad.of(FRAGMENT);
        }
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (c == '?') {
                return new String[] {rest.substring(0, i), rest.substring(i + 1)};
            }
        }
        return new String[] {rest, null};
    }

    private static Parts start(Url.Form form, boolean tls, String name) {
        Parts u = new Parts();
        u.form = form;
        u.tls = tls;
        u.name = name;
        return u;
    }

    private static Url parseServer(String raw, String name, Bad bad) {
        Parts u = start(Url.Form.SINGLE, raw.startsWith("rediss://"), name);
        String[] split = splitQuery(raw.substring(raw.indexOf("://") + 3), bad);
        int slash = split[0].indexOf('/');
        String netloc = slash < 0 ? split[0] : split[0].substring(0, slash);
        String path = slash < 0 ? "" : split[0].substring(slash + 1);
        int at = netloc.lastIndexOf('@');
        if (at >= 0) {
            readLogin(u, netloc.substring(0, at), false, bad);
            netloc = netloc.substring(at + 1);
        }
        u.addrs.add(address(netloc, Url.DEFAULT_PORT, bad));
        if (!path.isEmpty()) {
            u.db = database(path, "database", bad);
        }
        if (split[1] != null) {
            query(u, split[1], bad);
        }
        return u.url();
    }

    private static Url parseSocket(String raw, String name, Bad bad) {
        Parts u = start(Url.Form.SINGLE, false, name);
        String[] split = splitQuery(raw.substring("unix://".length()), bad);
        String rest = split[0];
        int at = rest.indexOf("@/");
        if (at >= 0) {
            readLogin(u, rest.substring(0, at), false, bad);
            rest = rest.substring(at + 1);
        }
        if (!rest.startsWith("/")) {
            throw bad.of("a socket path is required (unix:///path/to/redis.sock)");
        }
        u.socket = rest;
        if (split[1] != null) {
            query(u, split[1], bad);
        }
        return u.url();
    }

    private static Url parseCluster(String raw, String name, Bad bad) {
        Parts u = start(Url.Form.CLUSTER, raw.startsWith("rediss"), name);
        String rest = raw.substring(raw.indexOf("://") + 3);
        if (rest.contains("#")) {
            throw bad.of(FRAGMENT);
        }
        if (rest.contains("?")) {
            throw bad.of("query parameters are not supported");
        }
        int slash = rest.indexOf('/');
        String netloc = slash < 0 ? rest : rest.substring(0, slash);
        String path = slash < 0 ? "" : rest.substring(slash + 1);
        if (!path.isEmpty() && !path.equals("0")) {
            throw bad.of("Redis Cluster has only database 0");
        }
        int at = netloc.lastIndexOf('@');
        if (at >= 0) {
            readLogin(u, netloc.substring(0, at), true, bad);
            netloc = netloc.substring(at + 1);
        }
        if (netloc.isEmpty()) {
            throw bad.of("a host is required");
        }
        if (netloc.contains(",")) {
            throw bad.of("one seed address only: the others are found from it");
        }
        u.addrs.add(address(netloc, Url.DEFAULT_PORT, bad));
        return u.url();
    }

    private static Url parseSentinel(String raw, String name, Bad bad) {
        Parts u = start(Url.Form.SENTINEL, raw.startsWith("rediss"), name);
        String rest = raw.substring(raw.indexOf("://") + 3);
        int slash = rest.indexOf('/');
        String netloc = slash < 0 ? rest : rest.substring(0, slash);
        String path = slash < 0 ? "" : rest.substring(slash + 1);
        if (rest.contains("#")) {
            throw bad.of(FRAGMENT);
        }
        if (rest.contains("?")) {
            throw bad.of("query parameters are not supported");
        }
        String service = unescape(path, false, bad);
        if (service.isEmpty() || service.contains("/")) {
            throw bad.of("the master's name is required: redis+sentinel://host:port[,host:port...]/MASTER_NAME");
        }
        u.service = service;
        int at = netloc.lastIndexOf('@');
        if (at >= 0) {
            readLogin(u, netloc.substring(0, at), true, bad);
            netloc = netloc.substring(at + 1);
        }
        for (String h : netloc.split(",", -1)) {
            u.addrs.add(address(h, Url.SENTINEL_PORT, bad));
        }
        return u.url();
    }
}
