package transport

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Node URLs, checked before anything connects (client/src/transport/urls.rs; the same answers
// in every client: conformance/urls.json). Schemes are read in any case. redis://, rediss://
// (TLS), unix://: one server, whose query may set db and client_name, nothing else;
// redis+cluster://, rediss+cluster://: a whole Redis Cluster (port 6379 by default, no query);
// redis+sentinel://, rediss+sentinel://: the master a group of sentinels names (port 26379 by
// default, no query). A refused URL's error shows it with its password hidden.

// Form is what a URL names.
type Form int

const (
	FormSingle Form = iota + 1
	FormCluster
	FormSentinel
)

func (f Form) String() string {
	return [...]string{"", "single", "cluster", "sentinel"}[f]
}

// HostPort is one address of a URL.
type HostPort struct {
	Host string
	Port int
}

// String is host:port, an IPv6 host bracketed.
func (h HostPort) String() string {
	return net.JoinHostPort(h.Host, strconv.Itoa(h.Port))
}

// URL is a node URL, parsed.
type URL struct {
	Form Form
	TLS  bool
	// Name is the URL with its password hidden: how the node is named in errors.
	Name string
	// Socket is a unix:// server's path; Addrs the server, the cluster's seed, or the
	// sentinels.
	Socket string
	Addrs  []HostPort
	// DB and ClientName: a single server's query (db wins over the path's database).
	DB         int
	ClientName string
	// Username and Password: the URL's login (the master's, for a sentinel URL); HasLogin
	// tells whether it gave one.
	Username, Password string
	HasLogin           bool
	// Service: the master's name a sentinel URL asks for.
	Service string
}

// Ports are the ports the URL names, defaults filled in (none for a socket).
func (u URL) Ports() []int {
	ports := []int{}
	for _, a := range u.Addrs {
		ports = append(ports, a.Port)
	}
	return ports
}

const (
	defaultPort  = 6379
	sentinelPort = 26379
)

var (
	passwordInURL   = regexp.MustCompile(`(?i)^([a-z+]+://[^:/@]*:)[^@]*@`)
	passwordInQuery = regexp.MustCompile(`(?i)([?&]password=)[^&]*`)
	digits          = regexp.MustCompile(`^[0-9]+$`)
	schemes         = []string{"redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://", "redis+sentinel://", "rediss+sentinel://"}
)

// Redact is the URL with any password hidden: redis://app:***@host:6379.
func Redact(raw string) string {
	return passwordInQuery.ReplaceAllString(passwordInURL.ReplaceAllString(raw, "${1}***@"), "${1}***")
}

// Parse checks a node URL. Its error names the URL with the password hidden.
func Parse(given string) (URL, error) {
	raw := lowerScheme(given)
	name := Redact(raw)
	bad := func(why string) error { return fmt.Errorf("node URL %q: %s", name, why) }
	switch {
	case strings.HasPrefix(raw, "redis+cluster://"), strings.HasPrefix(raw, "rediss+cluster://"):
		return parseCluster(raw, name)
	case strings.HasPrefix(raw, "redis+sentinel://"), strings.HasPrefix(raw, "rediss+sentinel://"):
		return parseSentinel(raw, name)
	case strings.HasPrefix(raw, "unix://"):
		return parseSocket(raw, name, bad)
	case strings.HasPrefix(raw, "redis://"), strings.HasPrefix(raw, "rediss://"):
		return parseServer(raw, name, bad)
	}
	what := "an unknown scheme"
	if !strings.Contains(raw, "://") {
		what = "no scheme"
	}
	last := len(schemes) - 1
	return URL{}, fmt.Errorf("node URL %q has %s: use %s or %s", name, what, strings.Join(schemes[:last], ", "), schemes[last])
}

// lowerScheme: REDIS://h is redis://h.
func lowerScheme(raw string) string {
	if at := strings.Index(raw, "://"); at >= 0 {
		return strings.ToLower(raw[:at]) + raw[at:]
	}
	return raw
}

func port(text string, bad func(string) error) (int, error) {
	if !digits.MatchString(text) {
		return 0, bad(fmt.Sprintf("bad port %q", text))
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 1 || n > 65535 {
		return 0, bad(fmt.Sprintf("port %s out of range 1-65535", text))
	}
	return n, nil
}

// address reads host[:port] or [v6][:port].
func address(text string, def int, bad func(string) error) (HostPort, error) {
	host, rest := text, ""
	if strings.HasPrefix(text, "[") {
		end := strings.Index(text, "]")
		if end < 0 {
			return HostPort{}, bad(fmt.Sprintf("bad address %q", text))
		}
		host, rest = text[1:end], text[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return HostPort{}, bad(fmt.Sprintf("bad address %q", text))
		}
	} else if i := strings.Index(text, ":"); i >= 0 {
		host, rest = text[:i], text[i:]
	}
	if host == "" || strings.ContainsAny(host, "[]") {
		return HostPort{}, bad(fmt.Sprintf("bad address %q (a host is required)", text))
	}
	if rest == "" {
		return HostPort{Host: host, Port: def}, nil
	}
	p, err := port(rest[1:], bad)
	return HostPort{Host: host, Port: p}, err
}

// query reads a single server's query: db and client_name, nothing else.
func query(u *URL, text string, bad func(string) error) error {
	values, err := url.ParseQuery(text)
	if err != nil {
		return bad("bad query")
	}
	for key, given := range values {
		if key != "db" && key != "client_name" {
			return bad(fmt.Sprintf("query parameter %q is not supported (only db, client_name; timeouts and TLS settings are options)", key))
		}
		if len(given) > 1 { // which one would count is nobody's guess
			return bad(fmt.Sprintf("query parameter %q given twice", key))
		}
	}
	if values.Has("db") {
		if u.DB, err = database(values.Get("db"), "db", bad); err != nil {
			return err
		}
	}
	u.ClientName = values.Get("client_name")
	return nil
}

// maxDB is the highest database number a server's databases setting (an int) can make.
const maxDB = 1<<31 - 2

// database reads a database number a server could have (digits, 0 to maxDB), as every client
// checks it; what names it in the error (the path's "database", the query's "db").
func database(text, what string, bad func(string) error) (int, error) {
	if !digits.MatchString(text) {
		return 0, bad(fmt.Sprintf("bad %s %q", what, text))
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n > maxDB {
		return 0, bad(fmt.Sprintf("database %s: a database number is from 0 to %d (below the server's databases)", text, maxDB))
	}
	return int(n), nil
}

// readLogin reads user:password (or :password, or user) before the @ of a URL.
func readLogin(u *URL, userinfo string, needPassword bool, bad func(string) error) error {
	u.HasLogin = true
	user, password, hasPassword := strings.Cut(userinfo, ":")
	if needPassword && !hasPassword {
		return bad("a user name needs a password (user:password@)")
	}
	var err1, err2 error
	u.Username, err1 = url.PathUnescape(user)
	u.Password, err2 = url.PathUnescape(password)
	if err1 != nil || err2 != nil {
		return bad("bad login")
	}
	return nil
}

func splitQuery(rest string) (string, string, bool) {
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		if rest[i] == '#' {
			return rest[:i], "", false
		}
		return rest[:i], rest[i+1:], true
	}
	return rest, "", false
}

func parseServer(raw, name string, bad func(string) error) (URL, error) {
	u := URL{Form: FormSingle, TLS: strings.HasPrefix(raw, "rediss://"), Name: name}
	rest := raw[strings.Index(raw, "://")+3:]
	rest, q, hasQuery := splitQuery(rest)
	netloc, path, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(netloc, "@"); at >= 0 {
		if err := readLogin(&u, netloc[:at], false, bad); err != nil {
			return URL{}, err
		}
		netloc = netloc[at+1:]
	}
	addr, err := address(netloc, defaultPort, bad)
	if err != nil {
		return URL{}, err
	}
	u.Addrs = []HostPort{addr}
	if path != "" {
		if u.DB, err = database(path, "database", bad); err != nil {
			return URL{}, err
		}
	}
	if hasQuery {
		return u, query(&u, q, bad)
	}
	return u, nil
}

func parseSocket(raw, name string, bad func(string) error) (URL, error) {
	u := URL{Form: FormSingle, Name: name}
	rest, q, hasQuery := splitQuery(raw[len("unix://"):])
	if at := strings.Index(rest, "@/"); at >= 0 {
		if err := readLogin(&u, rest[:at], false, bad); err != nil {
			return URL{}, err
		}
		rest = rest[at+1:]
	}
	if !strings.HasPrefix(rest, "/") {
		return URL{}, bad("a socket path is required (unix:///path/to/redis.sock)")
	}
	u.Socket = rest
	if hasQuery {
		return u, query(&u, q, bad)
	}
	return u, nil
}

func parseCluster(raw, name string) (URL, error) {
	u := URL{Form: FormCluster, TLS: strings.HasPrefix(raw, "rediss"), Name: name}
	bad := func(why string) error { return fmt.Errorf("cluster URL %q: %s", name, why) }
	rest := raw[strings.Index(raw, "://")+3:]
	if strings.ContainsAny(rest, "?#") {
		return URL{}, bad("query parameters are not supported")
	}
	netloc, path, _ := strings.Cut(rest, "/")
	if path != "" && path != "0" {
		return URL{}, bad("Redis Cluster has only database 0")
	}
	if at := strings.LastIndex(netloc, "@"); at >= 0 {
		if err := readLogin(&u, netloc[:at], true, bad); err != nil {
			return URL{}, err
		}
		netloc = netloc[at+1:]
	}
	if netloc == "" {
		return URL{}, bad("a host is required")
	}
	if strings.Contains(netloc, ",") {
		return URL{}, bad("one seed address only: the others are found from it")
	}
	addr, err := address(netloc, defaultPort, bad)
	u.Addrs = []HostPort{addr}
	return u, err
}

func parseSentinel(raw, name string) (URL, error) {
	u := URL{Form: FormSentinel, TLS: strings.HasPrefix(raw, "rediss"), Name: name}
	bad := func(why string) error { return fmt.Errorf("sentinel URL %q: %s", name, why) }
	rest := raw[strings.Index(raw, "://")+3:]
	netloc, path, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(path, "?#") || strings.ContainsAny(netloc, "?#") {
		return URL{}, bad("query parameters are not supported")
	}
	service, err := url.PathUnescape(path)
	if err != nil || service == "" || strings.Contains(service, "/") {
		return URL{}, bad("the master's name is required: redis+sentinel://host:port[,host:port...]/MASTER_NAME")
	}
	u.Service = service
	if at := strings.LastIndex(netloc, "@"); at >= 0 {
		if err := readLogin(&u, netloc[:at], true, bad); err != nil {
			return URL{}, err
		}
		netloc = netloc[at+1:]
	}
	for _, h := range strings.Split(netloc, ",") {
		addr, err := address(h, sentinelPort, bad)
		if err != nil {
			return URL{}, err
		}
		u.Addrs = append(u.Addrs, addr)
	}
	return u, nil
}
