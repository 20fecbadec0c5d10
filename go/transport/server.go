package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Server is one redis-server as a quorum node: a pool of connections, each call on one of its
// own (a queued wait blocks its connection on the server; a write and its WAIT for replicas
// share one). Connects lazily; a node that is down fails its calls at once, within the call's
// time.
type Server struct {
	name string
	tls  bool // connects with TLS (the advice about a failure differs)
	db   int  // the database its URL asks for: said when the server refuses it
	// fresh makes a new pool (nil for an application's pool, which is never replaced).
	fresh func() (Pool, func() error)

	mu     sync.Mutex
	pool   Pool
	close  func() error
	closed bool

	// identity: which server each connection reached (identity.go). A pool made here checks
	// each connection as it is dialled; an application's pool cannot tell a new connection
	// from an old one, so its server is identified on the first call and again after any call
	// that failed (identified false).
	identity   *Identity
	identified atomic.Bool
}

// idleConns is how many idle connections a server keeps: enough for a burst of waits on one
// node without dialling again.
const idleConns = 64

// NewServer is a node over an application's pool (New(pools...)), its server claimed for
// identity's node (nil: not checked). The pool stays the application's, but for a GoRedisPool:
// that one is dlock's own client (NewGoRedisPool), closed with the node.
func NewServer(name string, pool Pool, identity *Identity) *Server {
	closing := func() error { return nil }
	if own, ok := pool.(*GoRedisPool); ok {
		closing = own.Close
	}
	return &Server{name: name, pool: pool, close: closing, identity: identity}
}

// newURLServer is a node over a pool of connections made from a single server's URL.
func newURLServer(u URL, conf Config, identity *Identity) *Server {
	network, address := "unix", u.Socket
	if u.Socket == "" {
		network, address = "tcp", u.Addrs[0].String()
	}
	s := newDialServer(u.Name, network, address, u, conf, loginOf(conf, u), identity)
	s.db = u.DB
	return s
}

// newDialServer is a node over a pool of conf.Driver's connections to network/address (u's TLS,
// database and client name, who's login), each one's server claimed for identity's node before
// its first request.
func newDialServer(name, network, address string, u URL, conf Config, who login, identity *Identity) *Server {
	s := &Server{name: name, tls: u.TLS, identity: identity}
	if conf.Driver == GoRedis {
		opt := goRedisOptions(network, address, u, conf, who, identity)
		s.fresh = func() (Pool, func() error) {
			p := NewGoRedisPool(opt)
			return p, p.Close
		}
		s.pool, s.close = s.fresh()
		return s
	}
	opts := dialOptions(conf, u, who)
	s.fresh = func() (Pool, func() error) {
		p := &redis.Pool{
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return dialIdentified(ctx, network, address, opts, identity)
			},
			MaxIdle:     idleConns,
			IdleTimeout: time.Minute,
		}
		return RedigoPool{Pool: p}, p.Close
	}
	s.pool, s.close = s.fresh()
	return s
}

// login is a user and password.
type login struct{ user, password string }

// loginOf is the URL's login, else the configured one.
func loginOf(conf Config, u URL) login {
	if u.HasLogin {
		return login{u.Username, u.Password}
	}
	return login{conf.Username, conf.Password}
}

// dialOptions: every bound within conf.Timeout, the login, TLS, the URL's db and client_name.
func dialOptions(conf Config, u URL, who login) []redis.DialOption {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(conf.Timeout),
		redis.DialReadTimeout(conf.Timeout),
		redis.DialWriteTimeout(conf.Timeout),
		redis.DialTLSHandshakeTimeout(conf.Timeout),
		redis.DialDatabase(u.DB),
	}
	if who.user != "" {
		opts = append(opts, redis.DialUsername(who.user))
	}
	if who.password != "" {
		opts = append(opts, redis.DialPassword(who.password))
	}
	if u.ClientName != "" {
		opts = append(opts, redis.DialClientName(u.ClientName))
	}
	if u.TLS {
		opts = append(opts, redis.DialUseTLS(true))
		if conf.TLS != nil {
			opts = append(opts, redis.DialTLSConfig(conf.TLS))
		}
	}
	return opts
}

// dialIdentified dials network/address and claims its server for identity's node.
func dialIdentified(ctx context.Context, network, address string, opts []redis.DialOption, identity *Identity) (redis.Conn, error) {
	c, err := redis.DialContext(ctx, network, address, opts...)
	if err != nil {
		return nil, err
	}
	if err := identity.identify(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Name is the node's URL, password hidden.
func (s *Server) Name() string { return s.name }

// FailoverManaged is false: a plain master.
func (s *Server) FailoverManaged() bool { return false }

func (s *Server) current() (Pool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pool, s.closed
}

// reset replaces a pool whose connections were found broken (the server restarted): the idle
// ones are likely broken too.
func (s *Server) reset(old Pool) {
	if s.fresh == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool != old || s.closed {
		return
	}
	_ = s.close()
	s.pool, s.close = s.fresh()
}

// Call sends cmds on one connection; see Node.
func (s *Server) Call(ctx context.Context, connect, whole time.Duration, cmds [][]string) ([]interface{}, *Failure) {
	start := time.Now()
	for try := 0; ; try++ {
		pool, closed := s.current()
		if closed {
			return nil, &Failure{Node: s.name, Reason: "the lock manager is closed"}
		}
		replies, err, connected := s.once(ctx, pool, start, connect, whole, cmds)
		switch {
		case err == nil:
			return replies, nil
		case !connected:
			return nil, connectFailure(s.name, err, s.tls, connect, s.db)
		case isTimeout(err):
			return nil, &Failure{Node: s.name, Reason: "timed out after " + whole.String(), NoReply: true}
		case try == 0 && time.Since(start) < connect:
			// A connection found broken: the server restarted since it was last used. Every
			// request is safe to repeat by the same owner, so ask once more on a fresh pool.
			s.reset(pool)
		default:
			// After a reset, the connection was dialled for this call.
			return nil, &Failure{Node: s.name, Reason: broken(err, s.tls, try > 0)}
		}
	}
}

// once: one try; connected tells a call that got a connection.
func (s *Server) once(ctx context.Context, pool Pool, start time.Time, connect, whole time.Duration, cmds [][]string) ([]interface{}, error, bool) {
	cctx, cancel := context.WithDeadline(ctx, start.Add(connect))
	defer cancel()
	conn, err := pool.Get(cctx)
	if err == nil && s.fresh == nil && s.identity != nil && !s.identified.Load() {
		err = s.identifyPooled(cctx, conn)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, err, false
	}
	defer conn.Close()
	dctx, cancel := context.WithDeadline(ctx, start.Add(whole))
	defer cancel()
	replies, err := conn.Do(dctx, cmds...)
	var setup setupFailed // a driver that connects on the first command (goredis.go)
	if errors.As(err, &setup) {
		return nil, setup.err, false
	}
	if err != nil {
		s.identified.Store(false) // maybe another server behind the application's pool now
	}
	return replies, err, true
}

// identifyPooled claims the server behind an application's pool (see Server.identified).
func (s *Server) identifyPooled(ctx context.Context, conn Conn) error {
	err := s.identity.identifyBy(func(args ...string) (string, error) {
		replies, err := conn.Do(ctx, args)
		if err != nil {
			return "", err
		}
		switch r := replies[0].(type) {
		case Error:
			return "", r
		case string:
			return r, nil
		}
		return "", Refusal(fmt.Sprintf("cannot tell which server this is: %s answered %v", args[0], replies[0]))
	})
	s.identified.Store(err == nil)
	return err
}

// Close closes the pool's connections (one of an application's is left to it).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		_ = s.close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// describe says why connecting failed; a deadline as the time it allowed.
func describe(err error, within time.Duration) string {
	if isTimeout(err) {
		return "timed out after " + within.String()
	}
	return err.Error()
}
