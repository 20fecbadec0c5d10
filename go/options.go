package dlock

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"dlock.dev/dlock/transport"
)

// Every option, its default and its check (client/src/options.rs, node/src/options.ts): the
// same defaults and meaning as the other clients. One Option type serves Connect / NewManager
// (the nodes and how they are reached) and NewMutex (redsync's per-mutex options, which may
// also override the manager's timing); a connection option given to NewMutex is refused.

// WaitMode is how a wait for a lock is done.
type WaitMode int

const (
	// Queue waits on the nodes (DLOCK.ACQUIRE ... WAIT ... TICKET), served in ticket order.
	Queue WaitMode = iota
	// Retry tries, pauses RetryDelay plus up to RetryJitter, and tries again.
	Retry
)

// ReplicaAck is how many replicas each grant, commit and extension waits for.
type ReplicaAck struct{ replicas int }

var (
	// AckAuto waits for 1 replica on cluster and sentinel nodes, none on plain masters.
	AckAuto = ReplicaAck{replicas: -1}
	// AckOff waits for none.
	AckOff = ReplicaAck{replicas: 0}
)

// AckReplicas waits for n replicas on every node.
func AckReplicas(n int) ReplicaAck { return ReplicaAck{replicas: n} }

// config is every option, resolved.
type config struct {
	timeout, ackTimeout        time.Duration
	fencing                    bool
	waitMode                   WaitMode
	ack                        ReplicaAck
	maxHold, extendInterval    time.Duration // 0: none, ttl/3
	retryDelay, retryJitter    time.Duration
	retryCount                 int // -1: until the wait runs out
	drift                      Drift
	tls                        *tls.Config
	user, password             string
	sentinelUser, sentinelPass string
	driver                     Driver
	mutex                      mutexConfig
	errs                       []error
	connecting                 []string // connection options given (refused by NewMutex)
}

func defaults() config {
	return config{timeout: 50 * time.Millisecond, ackTimeout: 100 * time.Millisecond, fencing: true,
		waitMode: Queue, ack: AckAuto, retryDelay: 25 * time.Millisecond, retryJitter: 25 * time.Millisecond,
		retryCount: -1, drift: DefaultDrift, mutex: mutexDefaults()}
}

// Option sets one option.
type Option func(*config)

func (c *config) fail(format string, args ...interface{}) {
	c.errs = append(c.errs, invalid(fmt.Sprintf(format, args...)))
}

// duration checks a duration option: at least least, and at most what the nodes take.
func duration(c *config, name string, d, least time.Duration) time.Duration {
	if d < least {
		c.fail("%s must be at least %v, got %v", name, least, d)
	}
	if d > MaxWait {
		c.fail("%s", tooLong(name, d))
	}
	return d
}

// WithTimeout bounds every call to one node, connecting included (default 50 ms).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = duration(c, "timeout", d, time.Millisecond) }
}

// WithFencing turns two-phase quorum fencing on or off (default on; ignored with one node).
func WithFencing(on bool) Option { return func(c *config) { c.fencing = on } }

// WithWaitMode picks how Lock waits (default Queue; Queue needs fencing with several nodes,
// else Retry is used).
func WithWaitMode(m WaitMode) Option {
	return func(c *config) {
		if m != Queue && m != Retry {
			c.fail("wait mode must be Queue or Retry, got %d", m)
		}
		c.waitMode = m
	}
}

// WithReplicaAck sets how many replicas each write waits for (default AckAuto).
func WithReplicaAck(a ReplicaAck) Option {
	return func(c *config) {
		if a.replicas < -1 {
			c.fail("replica count must be 0 or more, got %d", a.replicas)
		}
		c.ack = a
	}
}

// WithAckTimeout is how long a write waits for its replicas (default 100 ms).
func WithAckTimeout(d time.Duration) Option {
	return func(c *config) { c.ackTimeout = duration(c, "ack timeout", d, 0) }
}

// WithMaxHold caps how long a watchdog keeps a lock extended; the loss signal fires then.
func WithMaxHold(d time.Duration) Option {
	return func(c *config) { c.maxHold = duration(c, "max hold", d, time.Millisecond) }
}

// WithExtendInterval is the watchdog's period (default ttl / 3).
func WithExtendInterval(d time.Duration) Option {
	return func(c *config) { c.extendInterval = duration(c, "extend interval", d, time.Millisecond) }
}

// WithRetryDelay is the pause between attempts (default 25 ms; redsync's option of the same
// name: for a Mutex it also sets the wait, tries times this).
func WithRetryDelay(d time.Duration) Option {
	return func(c *config) {
		c.retryDelay = duration(c, "retry delay", d, 0)
		c.mutex.delay = d
	}
}

// WithRetryJitter is the largest random extra pause between attempts (default 25 ms).
func WithRetryJitter(d time.Duration) Option {
	return func(c *config) { c.retryJitter = duration(c, "retry jitter", d, 0) }
}

// WithRetryCount is the most retries after the first attempt (default: until the wait runs
// out).
func WithRetryCount(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.fail("retry count must be 0 or more, got %d", n)
		}
		c.retryCount = n
	}
}

// WithDriftFactor is the clock drift allowed, as a share of the TTL (default 0.01; redsync's
// option of the same name).
func WithDriftFactor(f float64) Option {
	return func(c *config) {
		if !(f >= 0) || f >= 1 {
			c.fail("drift factor must be from 0 to below 1 (a share of the TTL), got %v", f)
		}
		c.drift.Factor = f
	}
}

// WithDriftConstant is the constant clock drift allowed (default 2 ms).
func WithDriftConstant(d time.Duration) Option {
	return func(c *config) { c.drift.Constant = duration(c, "drift constant", d, 0) }
}

// WithTLS is the TLS configuration for rediss:// nodes (default: the system's roots).
func WithTLS(t *tls.Config) Option {
	return func(c *config) {
		c.connecting = append(c.connecting, "WithTLS")
		c.tls = t
	}
}

// WithTLSFiles reads a CA bundle (replacing the system's roots) and a client certificate and
// key for mutual TLS, each PEM; "" leaves one out, but a certificate needs its key. Every file
// is read and checked now: a bad one is an ErrInvalidArgument naming it.
func WithTLSFiles(ca, cert, key string) Option {
	return func(c *config) {
		c.connecting = append(c.connecting, "WithTLSFiles")
		t, err := tlsFromFiles(ca, cert, key)
		if err != nil {
			c.errs = append(c.errs, err)
			return
		}
		c.tls = t
	}
}

func tlsFromFiles(ca, cert, key string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, invalid(fmt.Sprintf("CA file %s: %v", ca, err))
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, invalid(fmt.Sprintf("CA file %s holds no PEM certificate", ca))
		}
	}
	if (cert == "") != (key == "") {
		return nil, invalid(fmt.Sprintf("a client certificate needs its key and the reverse (certificate %q, key %q)", cert, key))
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, invalid(fmt.Sprintf("client certificate %s and key %s: %v", cert, key, err))
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// WithCredentials is the ACL user and password for nodes whose URL names none. The password
// appears in no error or log.
func WithCredentials(user, password string) Option {
	return func(c *config) {
		c.connecting = append(c.connecting, "WithCredentials")
		c.user, c.password = user, password
	}
}

// WithSentinelCredentials is the sentinels' own ACL user and password (redis+sentinel://
// nodes; a sentinel URL's login is the master's).
func WithSentinelCredentials(user, password string) Option {
	return func(c *config) {
		c.connecting = append(c.connecting, "WithSentinelCredentials")
		c.sentinelUser, c.sentinelPass = user, password
	}
}

// Driver is the Redis driver Connect's nodes are reached through: Redigo (the default) or
// GoRedis (go-redis v9). Servers and sentinel-managed masters connect through it; a Redis
// Cluster node and the sentinels themselves are asked through redigo and redisc whichever it is.
type Driver = transport.Driver

// The drivers WithDriver takes.
const (
	Redigo  = transport.Redigo
	GoRedis = transport.GoRedis
)

// WithDriver picks the Redis driver Connect's nodes are reached through (New and NewManager
// take pools of a driver already: redis/redigo, redis/goredis/v9).
func WithDriver(d Driver) Option {
	return func(c *config) {
		c.connecting = append(c.connecting, "WithDriver")
		if d != Redigo && d != GoRedis {
			c.fail("unknown driver %q: dlock.Redigo or dlock.GoRedis", d)
			return
		}
		c.driver = d
	}
}

// FromEnv takes what the dlock CLI reads from its environment: DLOCK_USER and DLOCK_PASSWORD,
// DLOCK_SENTINEL_USER and DLOCK_SENTINEL_PASSWORD, and the TLS files DLOCK_CACERT, DLOCK_CERT
// and DLOCK_KEY, each when set. Options after it override it.
func FromEnv() Option {
	return func(c *config) {
		c.connecting = append(c.connecting, "FromEnv")
		env := func(name, was string) string {
			if v, ok := os.LookupEnv(name); ok {
				return v
			}
			return was
		}
		c.user, c.password = env("DLOCK_USER", c.user), env("DLOCK_PASSWORD", c.password)
		c.sentinelUser = env("DLOCK_SENTINEL_USER", c.sentinelUser)
		c.sentinelPass = env("DLOCK_SENTINEL_PASSWORD", c.sentinelPass)
		ca, cert, key := os.Getenv("DLOCK_CACERT"), os.Getenv("DLOCK_CERT"), os.Getenv("DLOCK_KEY")
		if ca != "" || cert != "" || key != "" {
			WithTLSFiles(ca, cert, key)(c)
		}
	}
}

// resolve applies options over a base configuration; the first bad one's error.
func resolve(base config, options []Option) (config, error) {
	c := base
	c.errs, c.connecting = nil, nil
	for _, o := range options {
		if o == nil {
			return c, invalid("an option is nil")
		}
		o(&c)
	}
	if len(c.errs) > 0 {
		return c, c.errs[0]
	}
	return c, nil
}
