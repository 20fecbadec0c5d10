package dlock

import (
	"context"
	"sync"
	"time"
)

// A redsync-shaped Mutex over the manager's engine: dlock.New(pools...), NewMutex(name,
// options...), Lock / TryLock / Unlock / Extend (and their Context forms), Name, Value, Until,
// with redsync's option names where they mean the same, plus Token. A redsync program changes
// its imports and gets fencing tokens and fair, queued waiting (docs/go/redsync.md).

// DelayFunc is redsync's: the pause before try number tries.
type DelayFunc func(tries int) time.Duration

// mutexConfig: the options only a Mutex reads.
type mutexConfig struct {
	expiry    time.Duration
	tries     int
	delay     time.Duration // WithRetryDelay (0: redsync's average, 150 ms)
	delayFunc DelayFunc
	wait      time.Duration // WithWait (-1: tries times the delay)
	value     string
	reentrant bool
	owner     func() (string, error)
	// timeoutFactor: the per-node timeout is the expiry times this (0: the manager's).
	timeoutFactor float64
}

func mutexDefaults() mutexConfig {
	return mutexConfig{expiry: 8 * time.Second, tries: 32, wait: -1,
		owner: func() (string, error) { return newOwner(), nil }}
}

// waitFor is how long Lock waits: WithWait's, else what redsync's tries would take.
func (mc mutexConfig) waitFor() time.Duration {
	if mc.wait >= 0 {
		return mc.wait
	}
	var total time.Duration
	for try := 1; try < mc.tries; try++ {
		switch {
		case mc.delayFunc != nil:
			total += mc.delayFunc(try)
		case mc.delay > 0:
			total += mc.delay
		default:
			total += 150 * time.Millisecond // redsync's pause: 50 to 250 ms
		}
	}
	return total
}

// WithExpiry is the lock's TTL (redsync's; default 8 s).
func WithExpiry(d time.Duration) Option {
	return func(c *config) { c.mutex.expiry = d }
}

// WithTries bounds Lock's wait to what tries attempts would take (redsync's; default 32).
func WithTries(tries int) Option {
	return func(c *config) {
		if tries < 1 {
			c.fail("tries must be 1 or more, got %d", tries)
		}
		c.mutex.tries = tries
	}
}

// WithRetryDelayFunc: Lock waits as long as the pauses of tries attempts (redsync's).
func WithRetryDelayFunc(f DelayFunc) Option {
	return func(c *config) { c.mutex.delayFunc = f }
}

// WithWait is how long Lock waits for the lock, queued on the nodes.
func WithWait(d time.Duration) Option {
	return func(c *config) { c.mutex.wait = duration(c, "wait", d, 0) }
}

// WithTimeoutFactor sets the per-node timeout to the expiry times factor (redsync's; default:
// the manager's timeout, 50 ms).
func WithTimeoutFactor(factor float64) Option {
	return func(c *config) {
		if !(factor > 0) {
			c.fail("timeout factor must be above 0, got %v", factor)
		}
		c.mutex.timeoutFactor = factor
	}
}

// WithGenValueFunc makes the base of owner names (redsync's value); each round adds ":round".
// It must be unique per acquisition, as the protocol requires.
func WithGenValueFunc(f func() (string, error)) Option {
	return func(c *config) { c.mutex.owner = f }
}

// WithValue names the owner of a lock taken elsewhere, so this Mutex can Unlock or Extend it
// without locking (redsync's).
func WithValue(v string) Option {
	return func(c *config) { c.mutex.value = v }
}

// WithReentrant makes Lock on a Mutex that holds the lock take it once more (one Unlock more
// is then needed) instead of waiting for itself.
func WithReentrant(on bool) Option {
	return func(c *config) { c.mutex.reentrant = on }
}

// WithFailFast is accepted for redsync programs: replies are always counted as they come.
func WithFailFast(bool) Option { return func(*config) {} }

// WithShufflePools is accepted for redsync programs: every node is asked at once anyway.
func WithShufflePools(bool) Option { return func(*config) {} }

// WithSetNXOnExtend is accepted for redsync programs: an extension never revives an expired
// lock here (a node that lost it does not count).
func WithSetNXOnExtend() Option { return func(*config) {} }

// Mutex is a distributed mutual exclusion lock in redsync's shape.
type Mutex struct {
	name string
	b    *backend
	cfg  mutexConfig
	err  error

	mu   sync.Mutex
	lock *Lock
}

// NewMutex is a mutex on the lock name; options override the manager's timing for it. An
// option that says how to connect is refused (Lock and the rest then fail with it).
func (m *Manager) NewMutex(name string, options ...Option) *Mutex {
	if m.err != nil {
		return &Mutex{name: name, err: m.err}
	}
	cfg, err := resolve(m.b.cfg, options)
	if err == nil && len(cfg.connecting) > 0 {
		err = invalid(cfg.connecting[0] + " applies to Connect, not to a Mutex")
	}
	if err == nil && name == "" {
		err = invalid("the mutex name is empty")
	}
	if err == nil {
		err = checkLease(cfg.mutex.expiry, cfg.drift)
	}
	if f := cfg.mutex.timeoutFactor; f > 0 {
		cfg.timeout = time.Duration(float64(cfg.mutex.expiry) * f)
		if cfg.timeout < time.Millisecond {
			cfg.timeout = time.Millisecond
		}
	}
	if cfg.waitMode == Retry {
		cfg.retryCount = cfg.mutex.tries - 1
	}
	return &Mutex{name: name, b: m.b.with(cfg), cfg: cfg.mutex, err: err}
}

// Name is the lock's name.
func (mx *Mutex) Name() string { return mx.name }

// Value is the owner the nodes hold it under ("" before the first Lock, unless WithValue).
func (mx *Mutex) Value() string {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	if mx.lock != nil {
		return mx.lock.Owner()
	}
	return mx.cfg.value
}

// Until is when the lock's validity ends (zero when not held).
func (mx *Mutex) Until() time.Time {
	if l := mx.held(); l != nil {
		return l.Until()
	}
	return time.Time{}
}

// Token is the fencing token of the lock held: pass it to the protected resource, which must
// refuse lower ones. Lock.Token's rules: a TryLock (or retry-mode Lock) with fencing on and more
// than one node commits its token on first read, and a commit that fails is an ErrLockLost
// error (the lock is lost); not held is an ErrLockLost error too.
func (mx *Mutex) Token() (uint64, error) { return mx.TokenContext(context.Background()) }

// TokenContext is Token; a done ctx ends its wait for the commit (ctx's error).
func (mx *Mutex) TokenContext(ctx context.Context) (uint64, error) {
	if mx.err != nil {
		return 0, mx.err
	}
	if l := mx.held(); l != nil {
		return l.Token(ctx)
	}
	return 0, &Error{Kind: ErrLockLost, Resource: mx.name}
}

func (mx *Mutex) held() *Lock {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	return mx.lock
}

// TryLock makes one attempt.
func (mx *Mutex) TryLock() error { return mx.TryLockContext(context.Background()) }

// TryLockContext makes one attempt.
func (mx *Mutex) TryLockContext(ctx context.Context) error {
	return mx.take(ctx, acquireConfig{})
}

// Lock waits for the lock, queued on the nodes, as long as WithWait (or redsync's tries) says.
func (mx *Mutex) Lock() error { return mx.LockContext(context.Background()) }

// LockContext is Lock; a done ctx withdraws the wait and returns ctx's error.
func (mx *Mutex) LockContext(ctx context.Context) error {
	return mx.take(ctx, acquireConfig{wait: mx.cfg.waitFor(), waiting: true})
}

func (mx *Mutex) take(ctx context.Context, a acquireConfig) error {
	if mx.err != nil {
		return mx.err
	}
	if l := mx.held(); l != nil && mx.cfg.reentrant && l.Err() == nil {
		return l.Reenter(ctx)
	}
	if mx.b.isClosed() {
		return &Error{Kind: ErrClosed, Resource: mx.name}
	}
	l, err := acquireOn(ctx, mx.b, mx.name, mx.cfg.expiry.Truncate(time.Millisecond), a)
	if err != nil {
		return err
	}
	mx.mu.Lock()
	mx.lock = l
	mx.mu.Unlock()
	return nil
}

// Unlock releases one hold: true when a quorum released it. Not held there any more (it
// expired): false and an error matching ErrLockAlreadyExpired.
func (mx *Mutex) Unlock() (bool, error) { return mx.UnlockContext(context.Background()) }

// UnlockContext is Unlock.
func (mx *Mutex) UnlockContext(ctx context.Context) (bool, error) {
	if mx.err != nil {
		return false, mx.err
	}
	l := mx.held()
	var t tally
	switch {
	case l != nil:
		told, err := l.release()
		if err != nil || told == nil {
			return false, err
		}
		if l.isReleased() {
			mx.forget(l)
		}
		t = *told
	case mx.cfg.value != "":
		c := &calls{b: mx.b, resource: mx.name, kind: Exclusive}
		t = c.release(mx.cfg.value, mx.b.everywhere())
	default:
		return false, &Error{Kind: ErrLockLost, Resource: mx.name, op: opRelease}
	}
	return mx.verdict(t, opRelease)
}

func (mx *Mutex) forget(l *Lock) {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	if mx.lock == l {
		mx.lock = nil
	}
}

// verdict: true when a quorum did it; no quorum when too few answered; else not held.
func (mx *Mutex) verdict(t tally, o op) (bool, error) {
	needed := mx.b.needed(Exclusive)
	if t.done >= needed {
		return true, nil
	}
	if t.answered() < needed {
		return false, &Error{Kind: ErrNoQuorum, Resource: mx.name, Needed: needed, Failures: t.unreachable, op: o}
	}
	return false, &Error{Kind: ErrLockLost, Resource: mx.name, op: o}
}

// Extend resets the lock's TTL to the expiry: true when a quorum extended it.
func (mx *Mutex) Extend() (bool, error) { return mx.ExtendContext(context.Background()) }

// ExtendContext is Extend.
func (mx *Mutex) ExtendContext(ctx context.Context) (bool, error) {
	if mx.err != nil {
		return false, mx.err
	}
	if l := mx.held(); l != nil {
		err := l.Extend(ctx, mx.cfg.expiry)
		return err == nil, err
	}
	if mx.cfg.value == "" {
		return false, &Error{Kind: ErrLockLost, Resource: mx.name, op: opExtend}
	}
	c := &calls{b: mx.b, resource: mx.name, kind: Exclusive}
	_, t, ok := c.extend(mx.cfg.value, mx.cfg.expiry)
	if ok {
		return true, nil
	}
	if done, err := mx.verdict(t, opExtend); !done {
		return false, err
	}
	return false, &Error{Kind: ErrLockLost, Resource: mx.name, op: opExtend} // extended, but too late
}
