package transport

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Sentinel is a Sentinel-managed master as one quorum node
// (redis+sentinel://host:port[,host:port...]/NAME; rediss+sentinel:// over TLS to the sentinels
// and the master alike), as the Rust and Node clients have it: the sentinels are asked in turn
// (SENTINEL MASTER name; the one that answered first next time), the server they name is
// checked with ROLE (a sentinel can name a master a failover has just demoted), and the master
// found is kept until a call finds it down or read-only. The URL's login is the master's; the
// sentinels' own is Config's SentinelUsername / SentinelPassword.
type Sentinel struct {
	name    string
	service string
	tls     bool
	conf    Config
	master  login

	resolving sync.Mutex // one resolution at a time
	mu        sync.Mutex
	sentinels []HostPort
	current   *Server
	closed    bool
	identity  *Identity // the master found claims its server; the next one takes it over
}

func newSentinel(u URL, conf Config, identity *Identity) *Sentinel {
	return &Sentinel{name: u.Name, service: u.Service, tls: u.TLS, conf: conf,
		master: loginOf(conf, u), sentinels: append([]HostPort(nil), u.Addrs...), identity: identity}
}

// Name is the URL, password hidden.
func (s *Sentinel) Name() string { return s.name }

// FailoverManaged is true: the sentinels fail the master over to a replica.
func (s *Sentinel) FailoverManaged() bool { return true }

// Call sends cmds to the master the sentinels name now.
func (s *Sentinel) Call(ctx context.Context, connect, whole time.Duration, cmds [][]string) ([]interface{}, *Failure) {
	master, f := s.masterNode(ctx, connect)
	if f != nil {
		return nil, f
	}
	replies, f := master.Call(ctx, connect, whole, cmds)
	if f == nil && len(replies) > 0 {
		if e, ok := replies[0].(Error); ok && strings.HasPrefix(string(e), "READONLY") {
			f = &Failure{Node: master.name, Reason: string(e)}
		}
	}
	if f == nil {
		return replies, nil
	}
	if !strings.HasPrefix(f.Reason, "timed out") {
		s.forget(master) // down or demoted: ask the sentinels again next time
	}
	return nil, &Failure{Node: s.name, Reason: master.name + ": " + f.Reason, NoReply: f.NoReply}
}

func (s *Sentinel) forget(master *Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == master {
		s.current = nil
		master.Close()
	}
}

func (s *Sentinel) known() (*Server, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, s.closed
}

// masterNode is the master the sentinels name (kept until a call finds it down or demoted).
func (s *Sentinel) masterNode(ctx context.Context, within time.Duration) (*Server, *Failure) {
	if m, closed := s.known(); m != nil || closed {
		if closed {
			return nil, &Failure{Node: s.name, Reason: "the lock manager is closed"}
		}
		return m, nil
	}
	s.resolving.Lock()
	defer s.resolving.Unlock()
	if m, _ := s.known(); m != nil {
		return m, nil
	}
	m, why := s.resolve(ctx, within)
	if m == nil {
		return nil, &Failure{Node: s.name, Reason: fmt.Sprintf("no sentinel names a master for %q: %s", s.service, why)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		m.Close()
		return nil, &Failure{Node: s.name, Reason: "the lock manager is closed"}
	}
	s.current = m
	return m, nil
}

// resolve asks the sentinels in turn; the master found, or what each said.
func (s *Sentinel) resolve(ctx context.Context, within time.Duration) (*Server, string) {
	s.mu.Lock()
	sentinels := append([]HostPort(nil), s.sentinels...)
	s.mu.Unlock()
	var said []string
	for i, at := range sentinels {
		addr, why := s.ask(ctx, at, within)
		if why != "" {
			said = append(said, fmt.Sprintf("sentinel %s: %s", at, why))
			continue
		}
		s.first(i)
		// The group's one place: a failover's new master takes the claim over (identity.go).
		m := newDialServer("master "+addr, "tcp", addr, URL{TLS: s.tls}, s.conf, s.master, s.identity)
		role, f := m.Call(ctx, within, within, [][]string{{"ROLE"}})
		if f == nil {
			if r, ok := role[0].([]interface{}); ok && len(r) > 0 && r[0] == "master" {
				return m, ""
			}
		}
		m.Close()
		what := "unreachable"
		if f != nil {
			what += " (" + f.Reason + ")"
		} else if r, ok := role[0].([]interface{}); ok && len(r) > 0 {
			what = fmt.Sprintf("a %v (a failover under way?)", r[0])
		}
		said = append(said, fmt.Sprintf("%s, named master by sentinel %s, is %s", addr, at, what))
		break
	}
	return nil, strings.Join(said, "; ")
}

// first: the sentinel that answered is asked first next time.
func (s *Sentinel) first(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i > 0 && i < len(s.sentinels) {
		at := s.sentinels[i]
		s.sentinels = append([]HostPort{at}, append(s.sentinels[:i:i], s.sentinels[i+1:]...)...)
	}
}

// ask is one sentinel's answer: the master's address, or why not.
func (s *Sentinel) ask(ctx context.Context, at HostPort, within time.Duration) (string, string) {
	conf := s.conf
	conf.Timeout = within
	dctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c, err := redis.DialContext(dctx, "tcp", at.String(), dialOptions(conf, URL{TLS: s.tls}, login{conf.SentinelUsername, conf.SentinelPassword})...)
	if err != nil {
		return "", cannotConnect(err, s.tls, within)
	}
	defer c.Close()
	replies, err := RedigoConn{C: c}.Do(dctx, []string{"SENTINEL", "MASTER", s.service})
	if err != nil {
		return "", describe(err, within)
	}
	return masterAddress(s.service, replies[0])
}

// masterAddress reads SENTINEL MASTER's reply: the master's address, or why this sentinel
// gives none.
func masterAddress(service string, reply interface{}) (string, string) {
	if e, ok := reply.(Error); ok {
		return "", string(e)
	}
	list, _ := reply.([]interface{})
	fields := map[string]string{}
	for i := 0; i+1 < len(list); i += 2 {
		fields[fmt.Sprint(list[i])] = fmt.Sprint(list[i+1])
	}
	port, err := strconv.Atoi(fields["port"])
	if fields["ip"] == "" || err != nil {
		return "", fmt.Sprintf("unexpected SENTINEL MASTER reply for %q", service)
	}
	addr := HostPort{Host: fields["ip"], Port: port}.String()
	flags := strings.Split(fields["flags"], ",")
	master := false
	for _, f := range flags {
		if f == "s_down" || f == "o_down" {
			return "", fmt.Sprintf("sees %s as %s", addr, fields["flags"])
		}
		master = master || f == "master"
	}
	if !master {
		return "", fmt.Sprintf("sees %s as %s", addr, fields["flags"])
	}
	return addr, ""
}

// Close closes the master's connections.
func (s *Sentinel) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.current != nil {
		s.current.Close()
		s.current = nil
	}
}
