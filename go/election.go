package dlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Leader election (docs/election.md, client/src/election.rs): a campaign is a queued exclusive
// lock on the election's name whose owner carries the candidate's value ("<id> <value>"), so
// that the fair queue, the handoff, replication and persistence carry the value with the grant;
// the leader's epoch is its fencing token, rising with every leader. Leadership is kept by the
// watchdog under the lease-loss contract (renewal.go). Who leads is read (Leader) or followed
// (Observe, election_watch.go) by the same rule: one holder with one token on a quorum.

// MaxValueLen is the longest value a candidate may carry: the owner (at most 256 bytes on the
// nodes) also holds the candidate's id, its round and a space.
const MaxValueLen = 200

// campaignRound is how long one queued round of a campaign waits before it queues again (it
// waits on the nodes, so this only bounds how stale a forgotten campaign's place can get).
const campaignRound = time.Minute

// Leader is who leads an election.
type Leader struct {
	// ID is the leader's candidate id (unique per campaign).
	ID string
	// Value is the value it campaigned with or last proclaimed.
	Value string
	// Epoch is the fencing token of its leadership, larger than every earlier leader's.
	Epoch uint64
}

// SplitOwner splits an owner into the candidate id and the value, which follows the first
// space.
func SplitOwner(owner string) (id, value string) {
	if i := strings.IndexByte(owner, ' '); i >= 0 {
		return owner[:i], owner[i+1:]
	}
	return owner, ""
}

// checkElection refuses a name or value the nodes would refuse, before any node is asked.
func (m *Manager) checkElection(name, value string) error {
	if m.err != nil {
		return m.err
	}
	if name == "" {
		return invalid("an election needs a name")
	}
	if len(value) > MaxValueLen {
		return invalid(fmt.Sprintf("a leader's value is at most %d bytes, got %d", MaxValueLen, len(value)))
	}
	if m.b.isClosed() {
		return &Error{Kind: ErrClosed, Resource: name}
	}
	return nil
}

// seen is one node's holder of the election's lock (nil: free).
type seen struct {
	owner string
	token uint64
}

// leaderView is who leads, from what each node holds (nodes[i] nil: node i did not answer; its
// *seen nil: free): the candidate holding on needed nodes, whatever its tokens (see pick); nil
// when nobody does; known false when fewer than needed answered.
func leaderView(nodes []**seen, needed int, previous *Leader) (leader *Leader, known bool) {
	var holders []Leader
	answered := 0
	for _, n := range nodes {
		if n == nil {
			continue
		}
		answered++
		if *n != nil {
			id, value := SplitOwner((*n).owner)
			holders = append(holders, Leader{ID: id, Value: value, Epoch: (*n).token})
		}
	}
	if answered < needed {
		return nil, false
	}
	count := func(match func(Leader) bool) int {
		k := 0
		for _, h := range holders {
			if match(h) {
				k++
			}
		}
		return k
	}
	for _, h := range holders {
		if count(func(o Leader) bool { return o.ID == h.ID }) >= needed {
			return pick(holders, h, needed, previous, count), true
		}
	}
	return nil, true
}

// pick is the leader first.ID: its epoch the token it holds on needed nodes (the committed
// one), else the previous leader's while the same candidate still holds it, else its smallest (a node granted late keeps its own larger token, so with committed
// nodes down the epoch is on fewer); its value the one it holds on needed nodes, else the
// previous leader's while a proclamation spreads, else the first node's.
func pick(holders []Leader, first Leader, needed int, previous *Leader, count func(func(Leader) bool) int) *Leader {
	lead, committed := first, false
	for _, o := range holders {
		if o.ID == first.ID && count(func(p Leader) bool { return p.ID == first.ID && p.Epoch == o.Epoch }) >= needed {
			lead.Epoch, committed = o.Epoch, true
			break
		}
	}
	// A leadership's epoch never changes while it lasts: the one already seen is kept while a
	// node holds it (a resignation may release the epoch's nodes first).
	kept := false
	for _, o := range holders {
		if !committed && previous != nil && previous.ID == first.ID && o.ID == first.ID && o.Epoch == previous.Epoch {
			lead.Epoch, kept = previous.Epoch, true
		}
	}
	for _, o := range holders {
		if !committed && !kept && o.ID == first.ID && o.Epoch < lead.Epoch {
			lead.Epoch = o.Epoch
		}
	}
	if previous != nil && previous.ID == first.ID && previous.Epoch == lead.Epoch {
		lead.Value = previous.Value
	}
	for _, o := range holders {
		if o.ID == first.ID && count(func(p Leader) bool { return p.ID == first.ID && p.Value == o.Value }) >= needed {
			lead.Value = o.Value
			break
		}
	}
	return &lead
}

// holderOf reads a node's DLOCK.STATUS or DLOCK.OBSERVE reply: nil when free, else the fields
// owner and token in pairs; a shared lock or a semaphore (a kind field) is not an election.
func (c *calls) holderOf(node int, r interface{}) (*seen, error) {
	if r == nil {
		return nil, nil
	}
	where := c.b.nodes[node].Name()
	list, ok := r.([]interface{})
	if !ok || len(list)%2 != 0 {
		return nil, &NodeFailure{Node: where, Reason: fmt.Sprintf("unexpected reply %v", r)}
	}
	var h seen
	var hasOwner, hasToken bool
	for i := 0; i < len(list); i += 2 {
		switch list[i] {
		case "owner":
			h.owner, hasOwner = list[i+1].(string)
		case "token":
			h.token, hasToken = tokenOf(list[i+1])
		case "kind":
			return nil, &Error{Kind: ErrWrongKind, Resource: c.resource, Message: where + ": held as a shared lock or semaphore, not an election"}
		}
	}
	if !hasOwner || !hasToken {
		return nil, &NodeFailure{Node: where, Reason: "a reply without owner and token"}
	}
	return &h, nil
}

// Campaign queues (fairly, on the nodes) to lead name with value (an address, an id; at most
// MaxValueLen bytes) and returns once elected, its leadership kept by a watchdog extending every
// ttl / 3. It waits as long as others lead; a done ctx stops campaigning (ctx's error). It fails
// on anything but contention: no quorum, the name held as another kind, bad input (refused
// before any node is asked).
func (m *Manager) Campaign(ctx context.Context, name, value string, ttl time.Duration) (*Leadership, error) {
	if err := m.checkElection(name, value); err != nil {
		return nil, err
	}
	if err := checkLease(ttl, m.b.cfg.drift); err != nil {
		return nil, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	c := &calls{b: m.b, resource: name, kind: Exclusive}
	p, owes := noWait(m.b)
	if m.b.queue {
		p, owes = queuePolicy, false
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		won, failure, attempts := newAcquirer(ctx, c, ttl, campaignRound, p).labelled(value).run(false)
		if failure == nil {
			return elected(ctx, newLock(c, ttl, won, owes), value)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if failure.kind != ErrContended {
			return nil, toError(m.b, name, Exclusive, failure, attempts)
		}
	}
}

// elected is the leadership lock holds, its epoch read first: a campaign won by an attempt
// that does not wait on the nodes commits its token before it reports leadership (commit.go).
// A commit that fails gives the lock back and is the error (ErrLockLost), as is a done ctx.
func elected(ctx context.Context, lock *Lock, value string) (*Leadership, error) {
	if _, err := lock.Token(ctx); err != nil {
		_ = lock.Release(context.Background())
		return nil, err
	}
	return newLeadership(lock, value), nil
}

// Leader is who leads name now (nil: nobody), read from every node; ErrNoQuorum when too few
// answered to tell, ErrWrongKind when name is a shared lock or a semaphore.
func (m *Manager) Leader(ctx context.Context, name string) (*Leader, error) {
	if err := m.checkElection(name, ""); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &calls{b: m.b, resource: name, kind: Exclusive}
	views := make([]**seen, len(m.b.nodes))
	var failures []NodeFailure
	for node, a := range c.status() {
		h, err := c.heard(node, a)
		var f *NodeFailure
		switch {
		case errors.As(err, &f):
			failures = append(failures, *f)
		case err != nil:
			return nil, err
		default:
			views[node] = &h
		}
	}
	needed := majority(len(m.b.nodes))
	leader, known := leaderView(views, needed, nil)
	if !known {
		return nil, &Error{Kind: ErrNoQuorum, Resource: name, Needed: needed, Failures: failures}
	}
	return leader, nil
}

// heard is what a node's answer says it holds: an error is a *NodeFailure (it did not say) or
// an ErrWrongKind *Error.
func (c *calls) heard(node int, a nodeAnswer) (*seen, error) {
	if a.failure != nil {
		if isWrongKind(*a.failure) {
			return nil, &Error{Kind: ErrWrongKind, Resource: c.resource, Message: a.failure.Node + ": " + a.failure.Reason}
		}
		return nil, a.failure
	}
	return c.holderOf(node, a.reply)
}

// Leadership is an election won by Campaign: its epoch, its value, and the loss signal (Context,
// as a Lock's). Resign hands it to the next candidate at once.
type Leadership struct {
	lock *Lock

	mu    sync.Mutex // one Proclaim or Resign at a time
	stop  func() bool
	value string
}

func newLeadership(lock *Lock, value string) *Leadership {
	return &Leadership{lock: lock, stop: lock.Watch(), value: value}
}

// Name is the election's name.
func (l *Leadership) Name() string { return l.lock.Resource() }

// Epoch is this leadership's fencing token, larger than every earlier leader's: pass it to
// guarded writes so that a deposed leader's writes are refused. It is committed on a quorum
// before Campaign returns, so reading it sends nothing.
func (l *Leadership) Epoch() uint64 { return l.lock.token }

// ID is the candidate id observers see with the value.
func (l *Leadership) ID() string {
	id, _ := SplitOwner(l.lock.Owner())
	return id
}

// Value is the value observers read.
func (l *Leadership) Value() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Lock is the lock leadership is held under (Guarded writes with the epoch, Until).
func (l *Leadership) Lock() *Lock { return l.lock }

// Context is done once leadership is lost (at its renew deadline without a confirmed
// extension, or at once when the nodes refuse one: docs/election.md, the lease-loss contract)
// and once resigned. Hand it to the work done as leader.
func (l *Leadership) Context() context.Context { return l.lock.Context() }

// Err is why Context is done: an ErrLockLost error, or nil (leading, or resigned).
func (l *Leadership) Err() error { return l.lock.Err() }

// Proclaim changes the value observers read, keeping leadership and epoch. ErrNoQuorum or
// ErrLockLost when a quorum did not take it (observers then read the old value, or none);
// ErrInvalidArgument for a value over MaxValueLen bytes, before any node is asked.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if len(value) > MaxValueLen {
		return invalid(fmt.Sprintf("a leader's value is at most %d bytes, got %d", MaxValueLen, len(value)))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lock.Err() != nil || l.lock.isReleased() {
		return l.lock.failed(opExtend, ErrLockLost, tally{})
	}
	// The watchdog extends under the owner's name: it pauses while the name changes.
	l.stop()
	id, _ := SplitOwner(l.lock.Owner())
	owner := id
	if value != "" {
		owner = id + " " + value
	}
	err := l.lock.rename(owner)
	if err == nil {
		l.value = value
	}
	renewed := l.lock.Extend(ctx, 0)
	if l.lock.Err() == nil {
		l.stop = l.lock.Watch()
	}
	if err != nil {
		return err
	}
	return renewed
}

// Resign gives leadership up: the watchdog stops before the release is sent (no extension
// follows it), and the next candidate queued is granted at once. Errors as Lock.Release's.
func (l *Leadership) Resign(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stop()
	return l.lock.Release(ctx)
}
