package dlock

import (
	"context"
	"fmt"
	"time"

	"dlock.dev/dlock/transport"
)

// Manager is the entry point (client/src/manager.rs): the nodes and the options. Acquire runs
// attempts through the driver (driver.go, decisions in attempt.go: docs/protocol.md §3-§5,
// docs/shared.md), WithLock adds the watchdog, NewMutex is redsync's shape over the same.

// Pool is the driver seam: one server, a connection of its own per Get (transport.Pool).
// redis/redigo wraps a redigo *redis.Pool, redis/goredis/v9 a go-redis client (docs/go/drivers.md).
type Pool = transport.Pool

// Conn is a Pool's connection (transport.Conn).
type Conn = transport.Conn

// Manager takes locks on its nodes. It is safe for concurrent use.
type Manager struct {
	b   *backend
	err error // New's refusal, returned by every call
}

// New is redsync's entry point: a manager over one pool per node (redis.Pool in redsync), with
// the default options. A nil pool or none at all makes every call fail with
// ErrInvalidArgument.
func New(pools ...Pool) *Manager {
	m, err := NewManager(pools)
	if err != nil {
		return &Manager{err: err}
	}
	return m
}

// NewManager is a manager over one pool per node, with options.
func NewManager(pools []Pool, options ...Option) (*Manager, error) {
	if len(pools) == 0 {
		return nil, invalid("no pools: a lock needs at least one node")
	}
	nodes := make([]transport.Node, len(pools))
	names := make([]string, len(pools))
	for i := range pools {
		names[i] = fmt.Sprintf("pool %d", i)
	}
	registry := transport.NewRegistry(names)
	for i, p := range pools {
		if p == nil {
			return nil, invalid(fmt.Sprintf("pool %d is nil", i))
		}
		nodes[i] = transport.NewServer(names[i], p, transport.NewIdentity(registry, i))
	}
	return newManager(nodes, registry, options)
}

// Connect is a manager over node URLs (docs/connecting.md): redis://, rediss://, unix://,
// redis+cluster://, redis+sentinel:// (and rediss+ for both). Every URL and option is checked
// before anything connects; nothing connects until the first lock.
func Connect(urls []string, options ...Option) (*Manager, error) {
	if len(urls) == 0 {
		return nil, invalid("no node URLs: a lock needs at least one node")
	}
	cfg, err := resolve(defaults(), options)
	if err != nil {
		return nil, err
	}
	parsed := make([]transport.URL, len(urls))
	seen := map[string]bool{}
	for i, raw := range urls {
		if parsed[i], err = transport.Parse(raw); err != nil {
			return nil, invalid(err.Error())
		}
		// Different texts can reach one server too: transport/identity.go checks what each reaches.
		if seen[parsed[i].Name] {
			return nil, invalid(fmt.Sprintf("node %s is given twice: list each server once", parsed[i].Name))
		}
		seen[parsed[i].Name] = true
	}
	conf := transport.Config{Timeout: cfg.timeout, TLS: cfg.tls, Username: cfg.user, Password: cfg.password,
		SentinelUsername: cfg.sentinelUser, SentinelPassword: cfg.sentinelPass, Driver: cfg.driver}
	names := make([]string, len(parsed))
	for i, u := range parsed {
		names[i] = u.Name
	}
	registry := transport.NewRegistry(names)
	nodes := make([]transport.Node, len(parsed))
	for i, u := range parsed {
		nodes[i] = transport.Open(u, conf, transport.NewIdentity(registry, i))
	}
	return &Manager{b: newBackend(nodes, registry, cfg)}, nil
}

func newManager(nodes []transport.Node, registry *transport.Registry, options []Option) (*Manager, error) {
	cfg, err := resolve(defaults(), options)
	if err != nil {
		return nil, err
	}
	return &Manager{b: newBackend(nodes, registry, cfg)}, nil
}

// Nodes are the nodes' names, as errors name them (passwords hidden).
func (m *Manager) Nodes() []string {
	if m.err != nil {
		return nil
	}
	names := make([]string, len(m.b.nodes))
	for i, n := range m.b.nodes {
		names[i] = n.Name()
	}
	return names
}

// AcquireOption says how Acquire takes a lock: Wait, Shared, Limit.
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	wait    time.Duration
	waiting bool
	kind    Kind
	modes   []Kind // a set's, one per key (Modes); nil: none given
	errs    []error
}

// Wait waits up to d for the lock (queued on the nodes by default) instead of one attempt.
func Wait(d time.Duration) AcquireOption {
	return func(a *acquireConfig) {
		if d < 0 {
			a.errs = append(a.errs, invalid(fmt.Sprintf("wait must be 0 or more, got %v", d)))
		}
		if d > MaxWait {
			a.errs = append(a.errs, invalid(tooLong("wait", d)))
		}
		a.wait, a.waiting = d, true
	}
}

// Shared takes a reader's hold: any number at once, none beside an exclusive holder.
func Shared() AcquireOption {
	return func(a *acquireConfig) { a.kind.shared = true }
}

// Limit takes one of k permits of a semaphore (k from 1 to MaxLimit).
func Limit(k int) AcquireOption {
	return func(a *acquireConfig) {
		if k < 1 || k > MaxLimit {
			a.errs = append(a.errs, invalid(fmt.Sprintf("a semaphore limit must be from 1 to %d, got %d", MaxLimit, k)))
		}
		a.kind.limit = k
	}
}

// MaxTTL is the longest TTL the nodes take by default (dlock.max-ttl-ms): a day.
const MaxTTL = 24 * time.Hour

// MaxWait is the longest duration the nodes take in any argument (WAIT's included): ten years,
// the module's LIMIT_MS. A longer wait is refused before it is sent, where every node would
// refuse it on every attempt.
const MaxWait = 315360000000 * time.Millisecond

func tooLong(name string, d time.Duration) string {
	return fmt.Sprintf("%s must be at most 315360000000 ms (ten years, the longest the nodes take), got %v", name, d)
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > MaxTTL {
		return invalid(fmt.Sprintf("ttl must be from 1 ms to 1 day (86400000 ms, the nodes' default dlock.max-ttl-ms), got %v", ttl))
	}
	return nil
}

// checkLease is checkTTL, and a TTL that leaves some validity after the clock drift allowance
// (validity is ttl - elapsed - drift: a shorter one is never valid, and asking for it would only
// retry until the wait ran out). The message names the shortest.
func checkLease(ttl time.Duration, drift Drift) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	ttl = ttl.Truncate(time.Millisecond)
	if _, ok := Validity(ttl, 0, drift); ok {
		return nil
	}
	allowance := fmt.Sprintf("the clock drift allowance (%g%% of the TTL + %g ms)", drift.Factor*100, float64(drift.Constant)/float64(time.Millisecond))
	shortest, ok := shortestTTL(drift)
	if !ok {
		return invalid("no ttl leaves any validity after " + allowance + ": lower the drift allowance")
	}
	return invalid(fmt.Sprintf("ttl must be at least %d ms: a shorter one leaves no validity after %s, got %d ms", shortest.Milliseconds(), allowance, ttl.Milliseconds()))
}

// shortestTTL is the shortest whole-millisecond TTL with some validity after drift.
func shortestTTL(drift Drift) (time.Duration, bool) {
	if drift.Factor >= 1 {
		return 0, false
	}
	// ttl*(1 - factor) > constant; the loop settles what floating point leaves in doubt.
	ms := int64(float64(drift.Constant)/float64(time.Millisecond)/(1-drift.Factor)) - 1
	if ms < 1 {
		ms = 1
	}
	for ttl := time.Duration(ms) * time.Millisecond; ttl <= MaxTTL; ttl += time.Millisecond {
		if _, ok := Validity(ttl, 0, drift); ok {
			return ttl, true
		}
	}
	return 0, false
}

// check refuses bad input before any node is asked.
func (m *Manager) check(resource string, ttl time.Duration, options []AcquireOption) (acquireConfig, error) {
	if m.err == nil && resource == "" {
		return acquireConfig{}, invalid("the resource name must not be empty")
	}
	a, err := m.checkOptions(resource, ttl, options)
	if err == nil && a.modes != nil {
		return a, invalid("Modes is for a set (AcquireAll): a single lock is Shared() or exclusive")
	}
	return a, err
}

// checkOptions: the lease and the options (resource names the lock in ErrClosed).
func (m *Manager) checkOptions(resource string, ttl time.Duration, options []AcquireOption) (acquireConfig, error) {
	var a acquireConfig
	if m.err != nil {
		return a, m.err
	}
	if err := checkLease(ttl, m.b.cfg.drift); err != nil {
		return a, err
	}
	for _, o := range options {
		if o == nil {
			return a, invalid("an acquire option is nil")
		}
		o(&a)
	}
	if len(a.errs) > 0 {
		return a, a.errs[0]
	}
	if a.kind.shared && a.kind.limit != 0 {
		return a, invalid(fmt.Sprintf("Shared and Limit(%d) exclude each other: a lock's shared side or a semaphore's permit, not both", a.kind.limit))
	}
	if m.b.isClosed() {
		return a, &Error{Kind: ErrClosed, Resource: resource}
	}
	return a, nil
}

// Acquire takes resource for ttl (whole milliseconds, at least 1): one attempt, or with Wait,
// waiting for it. A done ctx withdraws the wait from every queue (a RELEASE of the round's
// owner on every node) and returns ctx's error.
func (m *Manager) Acquire(ctx context.Context, resource string, ttl time.Duration, options ...AcquireOption) (*Lock, error) {
	a, err := m.check(resource, ttl, options)
	if err != nil {
		return nil, err
	}
	return acquireOn(ctx, m.b, resource, ttl.Truncate(time.Millisecond), a)
}

// acquireOn takes one resource; a queued wait takes its turn among the manager's callers first
// (local_waits.go), and one whose time runs out in the process makes one attempt at the end.
func acquireOn(ctx context.Context, b *backend, resource string, ttl time.Duration, a acquireConfig) (*Lock, error) {
	c := &calls{b: b, resource: resource, kind: a.kind}
	// A shared hold and a permit wait on the nodes each time: they are granted together.
	if !a.waiting || !b.queue || a.kind != Exclusive {
		return acquireWith(ctx, c, ttl, a)
	}
	deadline := time.Now().Add(a.wait)
	leave, came := b.shared.waits.turn(ctx, resource, a.wait)
	defer leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.waiting, a.wait = came, time.Until(deadline)
	if a.wait < 0 {
		a.wait = 0
	}
	return acquireWith(ctx, c, ttl, a)
}

// acquireWith takes the lock c is about (a resource, or a set: calls.set).
func acquireWith(ctx context.Context, c *calls, ttl time.Duration, a acquireConfig) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := c.b
	// Without a wait, one attempt that does not wait on the nodes; with one, queued (or retrying).
	p, owes := noWait(b)
	if a.waiting && b.queue {
		p, owes = queuePolicy, false
	}
	won, failure, attempts := newAcquirer(ctx, c, ttl, a.wait, p).run(!a.waiting)
	if failure == nil {
		return newLock(c, ttl, won, owes), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, toError(b, c.resource, c.kind, failure, attempts)
}

// noWait is the policy of an attempt that does not wait on the nodes (TryLock, retry mode),
// and whether its hold owes a commit (owed): it never commits while acquiring, its grants
// being the lock; with fencing on and more than one node, the commit is paid when the token is
// first read (commit.go).
func noWait(b *backend) (policy, bool) {
	return policy{queue: false, commit: false}, owed(true, len(b.nodes), b.cfg.fencing)
}

func toError(b *backend, resource string, kind Kind, f *attemptError, attempts int) error {
	e := &Error{Kind: f.kind, Resource: resource, op: opAcquire}
	switch f.kind {
	case ErrContended:
		e.Attempts = attempts
	case ErrNoQuorum:
		e.Needed, e.Failures = b.needed(kind), f.failures
	case ErrWrongKind:
		e.Message = f.failures[0].Node + ": " + f.failures[0].Reason
	case ErrInvalidArgument:
		e.Message = fmt.Sprintf("lock %q: %s refused an argument: %s", resource, f.failures[0].Node, f.failures[0].Reason)
		if f.failures[0].Refused == transport.RefusedDatabase { // the database, not the request
			e.Message = fmt.Sprintf("lock %q: %s", resource, f.failures[0])
		}
	case ErrContended, ErrValidityExpired:
	default:
		return f.kind // the owner generator's error
	}
	return e
}

// WithLock runs work while a watchdog keeps the lock extended, then releases it whatever
// happens. work's ctx is done when the lock is lost (or max hold passes) or when ctx is done;
// a lock lost meanwhile makes WithLock return an ErrLockLost error once work returned (work's
// own error first).
func (m *Manager) WithLock(ctx context.Context, resource string, ttl time.Duration, work func(ctx context.Context, lock *Lock) error, options ...AcquireOption) error {
	if work == nil {
		return invalid("work is nil")
	}
	lock, err := m.Acquire(ctx, resource, ttl, options...)
	if err != nil {
		return err
	}
	stop := lock.Watch()
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-lock.Context().Done():
			cancel()
		case <-wctx.Done():
		}
	}()
	err = work(wctx, lock)
	cancel()
	lost := stop()
	_ = lock.Release(context.Background())
	if err == nil && lost {
		err = &Error{Kind: ErrLockLost, Resource: resource, op: opExtend}
	}
	return err
}

// Close waits for the work left in the background (releases of withdrawn waits, of failed
// rounds), within a bound, then ends the idle workers (backend.go) and closes every connection.
func (m *Manager) Close() error {
	if m.err != nil {
		return nil
	}
	s := m.b.shared
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.background.Wait()
		close(done)
	}()
	bound := 4 * m.b.cfg.timeout
	if bound < 250*time.Millisecond {
		bound = 250 * time.Millisecond
	}
	select {
	case <-done:
	case <-time.After(bound):
	}
	close(s.workers.stop)
	for _, n := range m.b.nodes {
		n.Close()
	}
	return nil
}

// AcquireAll takes every resource of the set for ttl, all or nothing, under one token: one
// attempt, or with Wait, queued on every resource at once (holding none of them while it
// waits). The Lock is the set's: Token, Extend, Watch, Context and Release act on all of its
// resources (Reenter is refused). Refused before any node is asked (ErrInvalidArgument): no
// resource, more than MaxSet, one given twice, Modes not one Exclusive or SharedKind per
// resource, Shared or Limit (use Modes). With a Redis Cluster node, resources of several slots
// are taken one slot group after another (sets_cluster.go): the Lock then has one token per
// group (Tokens; Token is refused).
func (m *Manager) AcquireAll(ctx context.Context, resources []string, ttl time.Duration, options ...AcquireOption) (*Lock, error) {
	set, a, err := m.checkSet(resources, ttl, options)
	if err != nil {
		return nil, err
	}
	if len(groups(set.keys)) > 1 {
		for _, n := range m.b.nodes {
			if _, cluster := n.(*transport.Cluster); cluster {
				return acquireAcross(ctx, m.b, set, ttl.Truncate(time.Millisecond), a)
			}
		}
	}
	c := &calls{b: m.b, resource: set.name(), kind: Exclusive, set: set}
	return acquireWith(ctx, c, ttl.Truncate(time.Millisecond), a)
}

func (m *Manager) checkSet(resources []string, ttl time.Duration, options []AcquireOption) (*members, acquireConfig, error) {
	if m.err != nil {
		return nil, acquireConfig{}, m.err
	}
	// The set first: its rules are the conformance table's (conformance/sets.json).
	var probe acquireConfig
	for _, o := range options {
		if o != nil {
			o(&probe)
		}
	}
	set, err := newMembers(resources, probe.modes)
	if err != nil {
		return nil, probe, err
	}
	a, err := m.checkOptions(set.name(), ttl, options)
	if err != nil {
		return nil, a, err
	}
	if a.kind != Exclusive {
		return nil, a, invalid(fmt.Sprintf("AcquireAll takes Modes, not %v for the whole set", a.kind))
	}
	return set, a, nil
}
