package dlock

import (
	"context"
	"sync"
	"time"
)

// A held lock (client/src/lock.rs): its token, owner and validity; Extend, Reenter, Release;
// the lease-loss contract (renewal.go; Context: cancelled at the renew deadline while watched,
// unless an extension came first, at validity's end unwatched, at once when the nodes refuse
// one, and on release) and the watchdog (Watch); the commit its token may owe (commit.go), paid
// when Token is first called; the lease's writes one at a time (writes.go).
type Lock struct {
	calls      *calls
	ttl        time.Duration
	owner      string
	token      uint64
	acquiredAt time.Time
	stale      *signal // raised on the last release: grants still coming are not the holder's
	owes       *owing  // nil: nothing owed (a queued hold, one node, fencing off)
	across     *across // a set across slots: its groups (sets_cluster.go), which act for it

	mu         sync.Mutex
	validUntil time.Time
	ttlSet     time.Duration // the TTL last set on the nodes: the acquire's, or the last extension's
	holds      int
	released   bool
	lost       error
	ctx        context.Context
	cancel     context.CancelFunc
	watched    bool        // a watchdog keeps it: Context ends at the renew deadline
	renewBy    *time.Timer // Context's end: the renew deadline while watched, else validity's end
	// writes is the lease's one write at a time (writes.go): held by whatever sets the TTL on the
	// nodes (Extend, Reenter, the watchdog's extension, the commit) and by the last release,
	// from before its requests go out until their outcome is applied and every node answered.
	writes chan struct{}
}

// newLock is the lock won; owes: its hold owes the commit of its token (owed), to the nodes
// that granted it.
func newLock(c *calls, ttl time.Duration, won *granted, owes bool) *Lock {
	l := &Lock{calls: c, ttl: ttl, owner: won.owner, token: won.token, acquiredAt: time.Now(),
		stale: won.stale, validUntil: won.validUntil, ttlSet: ttl, holds: 1, writes: make(chan struct{}, 1)}
	if owes {
		l.owes = &owing{holding: won.holding, needed: c.b.needed(c.kind)}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.renewBy = time.AfterFunc(time.Until(won.validUntil), func() { l.lose(l.calls.lockLost()) })
	return l
}

// Token is the fencing token: pass it to the protected resource, which must refuse lower ones.
// A hold taken without waiting on the nodes (Acquire without Wait, retry mode) with fencing on
// and more than one node owes the commit of its token: the first call pays it (DLOCK.FENCE on
// every node that granted, one round shared by every caller, its outcome remembered) and the
// token comes once a quorum committed it. A commit that fails, or a lock released, known lost
// or past its validity before the commit, is an ErrLockLost error, and the lock is lost. A
// done ctx ends this call's wait, not the commit. Nothing owed (or committed already): the
// token at once.
func (l *Lock) Token(ctx context.Context) (uint64, error) {
	if l.across != nil {
		return 0, l.across.oneToken()
	}
	if l.owes == nil {
		return l.token, nil
	}
	return l.owes.read(ctx, l)
}

// Owner is the owner name the nodes hold it under.
func (l *Lock) Owner() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner
}

// Resource is the lock's name (a set's: its resources, comma-separated).
func (l *Lock) Resource() string { return l.calls.resource }

// Kind is how it is held: exclusively, shared, or as a semaphore's permit.
func (l *Lock) Kind() Kind { return l.calls.kind }

// Until is when the validity ends; the renew deadline (while watched) is a tenth of the TTL
// before it.
func (l *Lock) Until() time.Time {
	if l.across != nil {
		return l.across.until()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// Validity is the time left before the lock may be held by someone else (0 when over, and
// once the lock is lost).
func (l *Lock) Validity() time.Duration {
	if l.Err() != nil {
		return 0
	}
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

// Context is done once the lock may no longer be relied on: while a watchdog keeps it (Watch),
// at its renew deadline (a tenth of the TTL before validity ends, moved by each confirmed
// extension: docs/election.md, the lease-loss contract), without one when its validity ends; at
// once when the nodes refuse an extension, a commit fails or the watchdog passes max hold; and
// when it is released. Hand it to the work the lock protects.
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

// renewed moves the validity's end to until (a hold of ttl), and Context's end with it.
func (l *Lock) renewed(until time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil && !l.released {
		l.validUntil = until
		l.ttlSet = ttl
		l.renewBy.Reset(endIn(until, ttl, l.watched))
	}
}

// nodeTTL is the TTL last set on the nodes.
func (l *Lock) nodeTTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttlSet
}

// Extend resets the TTL on every node to ttl (0: the TTL it was taken with). ErrNoQuorum when
// too few nodes answered, ErrLockLost when a quorum answered and did not extend (or not within
// the new validity); either way the lock keeps its earlier deadline.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl == 0 {
		ttl = l.ttl
	}
	if err := checkLease(ttl, l.calls.b.cfg.drift); err != nil {
		return err
	}
	if l.across != nil {
		return l.across.extend(ctx, l, ttl)
	}
	if err := l.writing(ctx.Done()); err != nil {
		return ctx.Err()
	}
	defer l.written()
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.Err() != nil || l.isReleased() {
		return l.failed(opExtend, ErrLockLost, tally{})
	}
	until, t, ok := l.calls.extend(l.Owner(), ttl)
	if !ok {
		return l.failed(opExtend, ErrLockLost, t)
	}
	l.renewed(until, ttl)
	return nil
}

// Reenter takes the lock once more under the same owner and token (DLOCK.ACQUIRE ...
// REENTRANT): one Release more is then needed before it is free. The TTL starts afresh.
func (l *Lock) Reenter(ctx context.Context) error {
	if l.calls.set != nil {
		return invalid("a set is not reentrant: AcquireAll again by its owner renews it, no more")
	}
	if err := l.writing(ctx.Done()); err != nil {
		return ctx.Err()
	}
	defer l.written()
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.Err() != nil || l.isReleased() {
		return l.failed(opAcquire, ErrLockLost, tally{})
	}
	until, t, ok := l.calls.reenter(l.Owner(), l.ttl)
	if !ok {
		// Nodes that took the hold give it back: a hold short of a quorum is no hold.
		l.calls.release(l.Owner(), l.calls.b.everywhere())
		return l.failed(opAcquire, ErrLockLost, t)
	}
	l.mu.Lock()
	l.holds++
	l.mu.Unlock()
	l.renewed(until, l.ttl)
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
	if l.across != nil {
		return l.across.release(l)
	}
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
	owner := l.owner
	l.mu.Unlock()
	if last {
		// No write of the TTL follows the RELEASE: one still out (an extension, the commit)
		// ends first, and the next finds the lock released (it checks under writes, held
		// through the RELEASE).
		_ = l.writing(nil)
		defer l.written()
	}
	t := l.calls.release(owner, l.calls.b.everywhere())
	if last {
		l.cancel()
	}
	if needed := majority(len(l.calls.b.nodes)); t.answered() < needed {
		return &t, &Error{Kind: ErrNoQuorum, Resource: l.Resource(), Needed: needed, Failures: t.unreachable, op: opRelease}
	}
	return &t, nil
}

// Watch starts extending the lock every extend interval (default ttl / 3) until stop is
// called, or until max hold after it was acquired, by the lease-loss contract (renewal.go): an
// extension not confirmed is tried again at shorter pauses until the renew deadline (where
// Context ends), one the nodes refuse ends Context at once, and so does max hold. stop ends the
// extending and tells whether the lock was lost; Release stops it too, before its RELEASE.
// Without a watchdog there is no renew deadline: Context then ends when validity does.
func (l *Lock) Watch() (stop func() (lost bool)) {
	if l.across != nil {
		return l.across.watch(l)
	}
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
	l.watching(true)
	go func() {
		defer close(finished)
		l.keepExtended(interval, holdUntil, done)
	}()
	var once sync.Once
	return func() bool {
		once.Do(func() { close(done) })
		<-finished
		l.watching(false)
		return l.Err() != nil
	}
}

// keepExtended is the watchdog loop: the next step by renewal, the pause cut at the hold cap.
func (l *Lock) keepExtended(interval time.Duration, holdUntil time.Time, done chan struct{}) {
	last := extended
	for {
		now := time.Now()
		pause, lost := renewal(l.ttl, interval, l.Until().Sub(now), last)
		if lost {
			l.lose(l.calls.lockLost())
			return
		}
		capped := !holdUntil.IsZero() && !now.Add(pause).Before(holdUntil)
		if capped {
			pause = holdUntil.Sub(now)
		}
		timer := time.NewTimer(pause)
		select {
		case <-done:
			timer.Stop()
			return
		case <-l.ctx.Done(): // lost (a refusal, the renew deadline, a stale write) or released
			timer.Stop()
			return
		case <-timer.C:
		}
		if capped {
			l.lose(l.calls.lockLost())
			return
		}
		var goOn bool
		if last, goOn = l.extendOnce(done); !goOn {
			return
		}
	}
}

// extendOnce sends one extension and waits for it, raced against the renew deadline (whose
// timer then ends Context) and stop: how it went, or false when the watchdog is to end. A
// refusal loses the lock here, at once.
func (l *Lock) extendOnce(done chan struct{}) (extension, bool) {
	result := make(chan extension, 1)
	go func() {
		if l.writing(done) != nil {
			result <- unconfirmed
			return
		}
		defer l.written()
		if l.isReleased() || l.Err() != nil {
			result <- unconfirmed
			return
		}
		until, t, ok := l.calls.extend(l.Owner(), l.ttl)
		if ok {
			l.renewed(until, l.ttl)
			result <- extended
			return
		}
		result <- l.calls.outcome(t)
	}()
	select {
	case <-done:
		return 0, false
	case <-l.ctx.Done():
		return 0, false
	case e := <-result:
		if e == refused {
			l.lose(l.calls.lockLost())
			return e, false
		}
		return e, true
	}
}

// rename holds the lock under owner from now on (DLOCK.PROCLAIM, keeping token and lease): when
// a quorum did not take it, the nodes that did are turned back and the error says why.
func (l *Lock) rename(owner string) error {
	old := l.Owner()
	if owner == old {
		return nil
	}
	t := l.calls.proclaim(old, l.token, owner)
	if t.done >= l.calls.b.needed(l.calls.kind) {
		l.mu.Lock()
		l.owner = owner
		l.mu.Unlock()
		return nil
	}
	l.calls.proclaim(owner, l.token, old)
	return l.failed(opExtend, ErrLockLost, t)
}
