package dlock

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// The commit a hold may owe (client/src/commit.rs, ported; conformance/commits.json): first
// the machine, free of I/O (calls.commit feeds it the FENCE replies), then what a Lock keeps of
// the commit it owes and the one flight that pays it (Lock.Token reads through it).
//
// An attempt that does not wait on the nodes (Acquire without Wait, retry mode) holds once a
// quorum granted: its grants are plain, and no ticket can wound them, so exclusion does not
// need the commit. Its token does: the largest grant is a fencing token only once a quorum
// committed it. So the commit is paid when the token is first read, and only then: FENCE on
// every node that granted, the hold's token, the lease set afresh. A quorum of commits gives
// the token; too few left possible makes the lock lost, never an uncommitted token. A queued
// hold committed before it was held, one node has nothing to commit, and with fencing off
// there is no fencing token to commit.

// owed tells whether a hold taken by an attempt of this kind owes a commit before its token
// is read.
func owed(noWait bool, nodes int, fencing bool) bool {
	return noWait && nodes > 1 && fencing
}

// commitOutcome is where a commit stands.
type commitOutcome int

const (
	// commitPending: replies still decide it; reading the token waits.
	commitPending commitOutcome = iota
	// commitCommitted: a quorum committed the token (commitMachine.token).
	commitCommitted
	// commitLost: too few nodes can still commit: the lock is lost.
	commitLost
)

// commitMachine is one commit of one hold's token.
type commitMachine struct {
	needed    int
	token     uint64
	pending   []bool // the nodes asked whose answer has not come
	committed int
	outcome   commitOutcome
}

// startCommit starts the commit of token on holding (the nodes that granted it), held once
// needed of them committed: the machine and the nodes to send FENCE to.
func startCommit(nodes, needed int, token uint64, holding []int) (*commitMachine, []int) {
	if needed < 1 {
		needed = 1
	}
	c := &commitMachine{needed: needed, token: token, pending: make([]bool, nodes)}
	asked := []int{}
	for _, n := range holding {
		if n >= 0 && n < nodes {
			asked = append(asked, n)
			c.pending[n] = true
		}
	}
	c.decide()
	return c, asked
}

// onFenced: node's answer to its FENCE, committed or not (refused: no longer held by this
// owner; or the node failed). Answers from nodes not asked, repeated, or after the outcome is
// decided change nothing.
func (c *commitMachine) onFenced(node int, committed bool) commitOutcome {
	if c.outcome != commitPending || node < 0 || node >= len(c.pending) || !c.pending[node] {
		return c.outcome
	}
	c.pending[node] = false
	if committed {
		c.committed++
	}
	c.decide()
	return c.outcome
}

func (c *commitMachine) decide() {
	open := 0
	for _, p := range c.pending {
		if p {
			open++
		}
	}
	if c.committed >= c.needed {
		c.outcome = commitCommitted
	} else if c.committed+open < c.needed {
		c.outcome = commitLost
	}
}

// owing is what a Lock whose hold owes a commit remembers: the nodes that granted, the kind's
// quorum, and the one flight of the commit (nil until the token is first read).
type owing struct {
	holding []int
	needed  int

	mu     sync.Mutex
	flight *flight
}

// flight is one commit, shared by every reader: done once decided, err nil when committed.
type flight struct {
	done chan struct{}
	err  error
}

// read is the token once committed: the commit started by the first reader, waited for by
// every reader (a done ctx stops this reader's wait, not the commit), its outcome remembered.
func (o *owing) read(ctx context.Context, l *Lock) (uint64, error) {
	o.mu.Lock()
	f := o.flight
	if f == nil {
		if err := o.unstarted(ctx, l); err != nil {
			o.mu.Unlock()
			return 0, err
		}
		f = &flight{done: make(chan struct{})}
		o.flight = f
		l.calls.b.spawn(func() {
			f.err = l.commit(o)
			close(f.done)
		})
	}
	o.mu.Unlock()
	select {
	case <-f.done:
	default:
		select {
		case <-f.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if f.err != nil {
		return 0, f.err
	}
	return l.token, nil
}

// unstarted is why no commit can start now: the lock released or known lost, its validity
// over (the lease may be someone else's: the lock is lost, no FENCE sent), or ctx done.
func (o *owing) unstarted(ctx context.Context, l *Lock) error {
	if l.Err() != nil || l.isReleased() {
		return l.calls.commitLost()
	}
	if l.Validity() == 0 {
		lost := l.calls.commitLost()
		l.lose(lost)
		return lost
	}
	return ctx.Err()
}

// commit pays what the hold owes (calls.commit: FENCE on every node that granted, ttl the
// TTL last set on the nodes): nil once committed, the lease then counted from the commit
// round's start (the renew deadline moving with it); else the lock is lost and the error says
// so (a commit that took longer than the TTL allows is lost too), and the hold is given back
// (RELEASE everywhere, in the background: a FENCE that timed out may still land). It is one of
// the lease's writes (writes.go): held from before the FENCEs go out until every node
// answered, so an extension waiting for it cannot be overtaken by this round's FENCE PX.
func (l *Lock) commit(o *owing) error {
	_ = l.writing(nil)
	if err := o.unstarted(context.Background(), l); err != nil {
		l.written() // released, lost or over while an earlier write was out: nothing sent
		return err
	}
	started := time.Now()
	ttl := l.nodeTTL()
	owner := l.Owner()
	committed, rest := l.calls.commit(owner, l.token, ttl, o.holding, o.needed)
	var lost error
	if left, ok := l.calls.b.validity(ttl, started); committed && ok {
		l.renewed(time.Now().Add(left), ttl)
	} else {
		lost = l.calls.commitLost()
		l.lose(lost)
	}
	l.calls.b.spawn(func() {
		defer l.written()
		rest()
		if lost != nil {
			l.stale.raise()
			for i := 0; i < l.Holds(); i++ {
				l.calls.release(owner, l.calls.b.everywhere())
			}
		}
	})
	return lost
}

// commitLost is the error of a token that cannot be read: the lock is lost.
func (c *calls) commitLost() error {
	return &Error{Kind: ErrLockLost, Resource: c.resource}
}

// committed tells whether the token may leave the client: nothing owed, or its commit made.
func (l *Lock) committed() bool {
	o := l.owes
	if o == nil {
		return true
	}
	o.mu.Lock()
	f := o.flight
	o.mu.Unlock()
	if f == nil {
		return false
	}
	select {
	case <-f.done:
		return f.err == nil
	default:
		return false
	}
}

// String is the lock as a log line shows it: the token only once it may leave the client (its
// commit made, or none owed), "(uncommitted)" before.
func (l *Lock) String() string {
	if l == nil {
		return "<nil>"
	}
	token := "(uncommitted)"
	if l.across != nil {
		token = "(one per slot group)"
	} else if l.committed() {
		token = strconv.FormatUint(l.token, 10)
	}
	return fmt.Sprintf("dlock.Lock{resource: %q, kind: %v, owner: %q, token: %s, holds: %d, validity: %v}",
		l.Resource(), l.Kind(), l.Owner(), token, l.Holds(), l.Validity())
}

// Format prints String for every verb (%v, %+v, %#v, %d ...): fmt never shows the fields, so
// never an uncommitted token.
func (l *Lock) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, l.String())
}
