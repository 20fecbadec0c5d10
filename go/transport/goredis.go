package transport

// go-redis v9 behind the seam (the twin of redigo.go): a pool of go-redis connections, one of its
// own per Get (Client.Conn), each Do one pipeline. go-redis sets a connection up lazily, on its
// first command, so the setup a redigo pool does in Get happens here inside Do; the hook below
// tells that setup's failures from the commands' (Server.once says them as connect failures,
// conformance/errors.json's words) and bounds the setup by Get's deadline, not the call's.

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// goRedisConns bounds a go-redis pool's connections (it has a bound where redigo's has none):
// every queued wait holds one, so it is far above any burst of waits on one node.
const goRedisConns = 4096

// GoRedisPool is the Pool of a go-redis client made for dlock by NewGoRedisPool.
type GoRedisPool struct {
	client *redis.Client
}

// NewGoRedisPool is a pool over a new go-redis client of opt (a copy: the application's client
// is left as it is) with what the seam needs: RESP2 (replies as redigo reads them, arrays
// rather than RESP3 maps), no retries (the quorum retries, a failure is one node's), no read
// timeout of its own (a server-side wait answers when the call's deadline says, which
// ContextTimeoutEnabled honours), one dial per try, no CLIENT SETINFO or maintenance
// notifications on connect (fewer commands an ACL user must be allowed), no pipeline pool.
func NewGoRedisPool(opt *redis.Options) *GoRedisPool {
	o := *opt
	o.Protocol = 2
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.ContextTimeoutEnabled = true
	o.ReadTimeout = -1
	o.DisableIdentity = true
	o.PoolSize = goRedisConns
	o.MaxIdleConns = idleConns
	o.ConnMaxIdleTime = time.Minute
	o.PipelinePoolSize = -1
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	user := o.OnConnect
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		if s, ok := ctx.Value(setupKey{}).(*setup); ok {
			s.ready = true
		}
		return nil
	}
	client := redis.NewClient(&o)
	client.AddHook(setupHook{})
	return &GoRedisPool{client: client}
}

// Get is a connection of the pool's own; it connects (or takes an idle one) on its first Do,
// its setup within ctx's deadline.
func (p *GoRedisPool) Get(ctx context.Context) (Conn, error) {
	deadline, _ := ctx.Deadline()
	return &goRedisConn{conn: p.client.Conn(), connect: deadline}, nil
}

// Close closes the pool's connections.
func (p *GoRedisPool) Close() error { return p.client.Close() }

// goRedisConn is one go-redis connection and the deadline of its setup, if Do makes one.
type goRedisConn struct {
	conn    *redis.Conn
	connect time.Time
}

// Do pipelines cmds and reads their replies; an error reply is an Error in its place. A setup
// that failed (dialled, TLS, HELLO/AUTH, SELECT, the identity check) is a setupFailed.
func (c *goRedisConn) Do(ctx context.Context, cmds ...[]string) ([]interface{}, error) {
	s := &setup{connect: c.connect}
	ctx = context.WithValue(ctx, setupKey{}, s)
	pipe := c.conn.Pipeline()
	results := make([]*redis.Cmd, len(cmds))
	for i, cmd := range cmds {
		args := make([]interface{}, len(cmd))
		for j, a := range cmd {
			args[j] = a
		}
		results[i] = pipe.Do(ctx, args...)
	}
	s.own = results[0]
	_, err := pipe.Exec(ctx)
	var dial dialFailed
	if err != nil && ((s.began && !s.ready) || errors.As(err, &dial)) {
		return nil, setupFailed{err}
	}
	replies := make([]interface{}, len(cmds))
	for i, r := range results {
		v, err := r.Result()
		var reply redis.Error
		switch {
		case errors.Is(err, redis.Nil):
		case errors.As(err, &reply):
			replies[i] = Error(reply.Error())
		case err != nil:
			return nil, err
		default:
			replies[i] = normalizeGoRedis(v)
		}
	}
	return replies, nil
}

// Close gives the connection back to its pool (which drops it if it failed).
func (c *goRedisConn) Close() error { return c.conn.Close() }

// normalizeGoRedis turns an array's error elements into Error (the rest is already the seam's:
// int64, string, nil, []interface{}).
func normalizeGoRedis(r interface{}) interface{} {
	list, ok := r.([]interface{})
	if !ok {
		return r
	}
	out := make([]interface{}, len(list))
	for i, e := range list {
		if err, ok := e.(redis.Error); ok {
			out[i] = Error(err.Error())
			continue
		}
		out[i] = normalizeGoRedis(e)
	}
	return out
}

// setup is one Do's view of a connection go-redis sets up for it: the deadline, whether the
// setup began (HELLO, sent first, went through the hook) and ended (OnConnect ran), and the
// Do's own first command (its pipeline is not the setup's).
type setup struct {
	connect      time.Time
	began, ready bool
	own          redis.Cmder
}

type setupKey struct{}

// setupFailed is a failure to set a connection up: Server.once says it as a connect failure.
type setupFailed struct{ err error }

func (f setupFailed) Error() string { return f.err.Error() }
func (f setupFailed) Unwrap() error { return f.err }

// dialFailed is a dial that failed (go-redis dials in a goroutine of its own, so it is marked
// on the error rather than on the Do's setup).
type dialFailed struct{ err error }

func (f dialFailed) Error() string { return f.err.Error() }
func (f dialFailed) Unwrap() error { return f.err }

// setupHook marks dial failures, and runs every command of a connection's setup within the
// setup's deadline (go-redis sends them on the caller's context, before the Do's own).
type setupHook struct{}

func (setupHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, dialFailed{err}
		}
		return c, nil
	}
}

func (setupHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := inSetup(ctx, cmd)
		defer cancel()
		return next(ctx, cmd)
	}
}

func (setupHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var first redis.Cmder
		if len(cmds) > 0 {
			first = cmds[0]
		}
		ctx, cancel := inSetup(ctx, first)
		defer cancel()
		return next(ctx, cmds)
	}
}

// inSetup: a command of a connection's setup (not the Do's own, while OnConnect has not run)
// gets the setup's deadline.
func inSetup(ctx context.Context, first redis.Cmder) (context.Context, context.CancelFunc) {
	s, ok := ctx.Value(setupKey{}).(*setup)
	if !ok || s.ready || first == s.own {
		return ctx, func() {}
	}
	s.began = true
	if s.connect.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, s.connect)
}

// goRedisOptions are a single server's go-redis options: the login, the URL's database and
// client_name, TLS, every bound within conf.Timeout (dialOptions' twin), and each connection's
// server claimed for identity's node before its first request.
func goRedisOptions(network, address string, u URL, conf Config, who login, identity *Identity) *redis.Options {
	o := &redis.Options{Network: network, Addr: address, Username: who.user, Password: who.password,
		DB: u.DB, ClientName: u.ClientName, DialTimeout: conf.Timeout, WriteTimeout: conf.Timeout}
	if u.TLS {
		config := conf.TLS
		if config == nil {
			config = &tls.Config{MinVersion: tls.VersionTLS12} // the system's roots
		}
		o.Dialer = tlsDialer(config, conf.Timeout)
	}
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		return identity.identifyBy(func(args ...string) (string, error) {
			rest := make([]interface{}, len(args))
			for i, a := range args {
				rest[i] = a
			}
			return cn.Do(ctx, rest...).Text()
		})
	}
	return o
}

// tlsDialer connects, then shakes hands, as two steps: go-redis's own dialer does both in one
// dial, so a plain port that never answers the handshake read as a dial timeout ("timed out
// after ..."), where redigo's words say what is likely ("no TLS handshake within ...: a port
// without TLS?"). A handshake that fails is no dial failure here, as on the redigo path.
func tlsDialer(config *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := config.Clone()
		if c.ServerName == "" { // as go-redis's dialer: the host named by the address
			c.ServerName, _, _ = net.SplitHostPort(addr)
		}
		conn := tls.Client(raw, c)
		shake, cancel := context.WithDeadline(ctx, handshakeDeadline(ctx, timeout))
		defer cancel()
		if err := conn.HandshakeContext(shake); err != nil {
			_ = raw.Close()
			return nil, handshakeFailed{err}
		}
		return conn, nil
	}
}

// handshakeFailed is a TLS handshake that did not complete: after the dial, not part of it.
type handshakeFailed struct{ err error }

func (f handshakeFailed) Error() string { return f.err.Error() }
func (f handshakeFailed) Unwrap() error { return f.err }

// handshakeDeadline ends the handshake a tenth of the timeout (at least 10 ms) before the
// call's own deadline: a handshake cut by that deadline instead came back as the call's plain
// "timed out" from go-redis, not as this failure (a loaded machine flipped the race).
func handshakeDeadline(ctx context.Context, timeout time.Duration) time.Time {
	end := time.Now().Add(timeout)
	if call, ok := ctx.Deadline(); ok {
		margin := timeout / 10
		if margin < 10*time.Millisecond {
			margin = 10 * time.Millisecond
		}
		if early := call.Add(-margin); early.Before(end) {
			end = early
		}
	}
	return end
}
