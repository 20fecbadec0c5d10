package dlock

import (
	"context"
	"sync"
	"time"
)

// A held lock (client/src/lock.rs): its token, owner and validity; Extend, Reenter, Release;
// the lease-loss contract (Context: cancelled when validity runs out unless an extension came
// first, at once when the watchdog fails to extend, and on release) and the watchdog (Watch).
type Lock struct {
	calls      *calls
	ttl        time.Duration
	owner      string
	token      uint64
	acquiredAt time.Time
	stale      *signal // raised on the last release: grants still coming are not the holder's

	mu         sync.Mutex
	validUntil time.Time
	holds      int
	released   bool
	lost       error
	ctx        context.Context
	cancel     context.CancelFunc
	renewBy    *time.Timer // the renew deadline: validity's end
}

func newLock(c *calls, ttl time.Duration, won *granted) *Lock {
	l := &Lock{calls: c, ttl: ttl, owner: won.owner, token: won.token, acquiredAt: time.Now(),
		stale: won.stale, validUntil: won.validUntil, holds: 1}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.renewBy = time.AfterFunc(time.Until(won.validUntil), func() { l.lose(l.calls.lockLost()) })
	return l
}

// Token is the fencing token: pass it to the protected resource, which must refuse lower ones.
func (l *Lock) Token() uint64 { return l.token }

// Owner is the owner name the nodes hold it under.
func (l *Lock) Owner() string { return l.owner }

// Resource is the lock's name.
func (l *Lock) Resource() string { return l.calls.resource }

// Kind is how it is held: exclusively, shared, or as a semaphore's permit.
func (l *Lock) Kind() Kind { return l.calls.kind }

// Until is when the validity ends (the renew deadline).
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// Validity is the time left before the lock may be held by someone else (0 when over).
func (l *Lock) Validity() time.Duration {
	if left := time.Until(l.Until()); left > 0 {
		return left
	}
	return 0
}

// Holds is how many times it is held: 1, plus one per Reenter, minus one per Release.
func (l *Lock) Holds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds
}

// Context is done once the lock may no longer be relied on: at its renew deadline (the end of
// validity, moved by each extension), when the watchdog fails to extend it or passes max hold,
// and when it is released. Hand it to the work the lock protects.
func (l *Lock) Context() context.Context { return l.ctx }

// Err is why Context is done: an ErrLockLost error, or nil (held, or released).
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// lose ends the lease: Context is done, Err says why.
func (l *Lock) lose(why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil && !l.released {
		l.lost = why
	}
	l.cancel()
}

func (c *calls) lockLost() error {
	return &Error{Kind: ErrLockLost, Resource: c.resource, op: opExtend}
}

// renewed moves the renew deadline to until.
func (l *Lock) renewed(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil && !l.released {
		l.validUntil = until
		l.renewBy.Reset(time.Until(until))
	}
}

// Extend resets the TTL on every node to ttl (0: the TTL it was taken with). ErrNoQuorum when
// too few nodes answered, ErrLockLost when a quorum answered and did not extend (or not within
// the new validity); either way the lock keeps its earlier deadline.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl == 0 {
		ttl = l.ttl
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.Err() != nil || l.isReleased() {
		return l.failed(opExtend, ErrLockLost, tally{})
	}
	until, t, ok := l.calls.extend(l.owner, ttl)
	if !ok {
		return l.failed(opExtend, ErrLockLost, t)
	}
	l.renewed(until)
	return nil
}

// Reenter takes the lock once more under the same owner and token (DLOCK.ACQUIRE ...
// REENTRANT): one Release more is then needed before it is free. The TTL starts afresh.
func (l *Lock) Reenter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.Err() != nil || l.isReleased() {
		return l.failed(opAcquire, ErrLockLost, tally{})
	}
	until, t, ok := l.calls.reenter(l.owner, l.ttl)
	if !ok {
		// Nodes that took the hold give it back: a hold short of a quorum is no hold.
		l.calls.release(l.owner, l.calls.b.everywhere())
		return l.failed(opAcquire, ErrLockLost, t)
	}
	l.mu.Lock()
	l.holds++
	l.mu.Unlock()
	l.renewed(until)
	return nil
}

// failed is the error of an extension (or reentry, or release) that did not do it: no quorum
// when too few nodes answered to know, else kind.
func (l *Lock) failed(o op, kind error, t tally) error {
	needed := l.calls.b.needed(l.calls.kind)
	if t.answered() < needed && len(t.unreachable) > 0 {
		return &Error{Kind: ErrNoQuorum, Resource: l.Resource(), Needed: needed, Failures: t.unreachable, op: o}
	}
	return &Error{Kind: kind, Resource: l.Resource(), op: o}
}

func (l *Lock) isReleased() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// Release gives back one hold on every node; the last one frees the lock (and ends its
// Context). ErrNoQuorum names the unreachable nodes if too few answered (the lock then lingers
// there until its TTL); releasing a released lock does nothing. It is sent whatever ctx says:
// a release must go out.
func (l *Lock) Release(ctx context.Context) error {
	_, err := l.release()
	return err
}

// release: what the nodes said (nil when already released), and the error.
func (l *Lock) release() (*tally, error) {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil, nil
	}
	l.holds--
	last := l.holds <= 0
	if last {
		l.released = true
		l.renewBy.Stop()
		l.stale.raise()
	}
	l.mu.Unlock()
	t := l.calls.release(l.owner, l.calls.b.everywhere())
	if last {
		l.cancel()
	}
	if needed := majority(len(l.calls.b.nodes)); t.answered() < needed {
		return &t, &Error{Kind: ErrNoQuorum, Resource: l.Resource(), Needed: needed, Failures: t.unreachable, op: opRelease}
	}
	return &t, nil
}

// Watch starts extending the lock every extend interval (default ttl / 3) until stop is
// called, or until max hold after it was acquired; a failed extension, validity running out
// or max hold ends its Context at once. stop ends the extending and tells whether the lock
// was lost.
func (l *Lock) Watch() (stop func() (lost bool)) {
	cfg := l.calls.b.cfg
	interval := cfg.extendInterval
	if interval == 0 {
		interval = l.ttl / 3
	}
	if interval < time.Millisecond {
		interval = time.Millisecond
	}
	var holdUntil time.Time
	if cfg.maxHold > 0 {
		holdUntil = l.acquiredAt.Add(cfg.maxHold)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		l.keepExtended(interval, holdUntil, done)
	}()
	var once sync.Once
	return func() bool {
		once.Do(func() { close(done) })
		<-finished
		return l.Err() != nil
	}
}

// keepExtended extends before validity runs out; the first failure, or the hold cap, loses it.
func (l *Lock) keepExtended(interval time.Duration, holdUntil time.Time, done chan struct{}) {
	for {
		next := time.Now().Add(interval)
		if until := l.Until(); until.Before(next) {
			next = until
		}
		if !holdUntil.IsZero() && holdUntil.Before(next) {
			next = holdUntil
		}
		select {
		case <-done:
			return
		case <-l.ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		now := time.Now()
		if !now.Before(l.Until()) || (!holdUntil.IsZero() && !now.Before(holdUntil)) {
			l.lose(l.calls.lockLost())
			return
		}
		if err := l.Extend(context.Background(), l.ttl); err != nil {
			l.lose(l.calls.lockLost())
			return
		}
	}
}
