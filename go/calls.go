package dlock

import (
	"fmt"
	"sync"
	"time"

	"dlock.dev/dlock/transport"
)

// The calls to the nodes about one lock (client/src/calls.rs), the one set every path uses: an
// attempt's asks, waits and commits (driver.go), a lock's extensions, renewal, reentry and
// release (lock.go). Each reply is read here into what the caller decides on: an ask's token,
// nil or failure, a commit's yes or why not, a tally.
type calls struct {
	b        *backend
	resource string
	kind     Kind
	set      *members // a set's keys (sets.go): the *ALL commands; nil: the lock of resource
}

// The commands about the lock: a set's DLOCK.*ALL (one token for all its keys), else the single
// resource's. A set is one lock to everything else: one token or nil per node.

func (c *calls) acquireCmd(owner string, ttl time.Duration, wait *queued) []string {
	switch {
	case c.set != nil:
		return cmdAcquireAll(c.set.keys, c.set.modes, owner, ttl, wait)
	case wait != nil:
		return cmdWait(c.resource, owner, ttl, wait.timeout, wait.ticket, c.kind)
	}
	return cmdAcquire(c.resource, owner, ttl, c.kind, false)
}

func (c *calls) fenceCmd(owner string, token uint64, ttl time.Duration) []string {
	if c.set != nil {
		return cmdFenceAll(c.set.keys, owner, token, ttl)
	}
	return cmdFence(c.resource, owner, token, ttl)
}

func (c *calls) extendCmd(owner string, ttl time.Duration) []string {
	if c.set != nil {
		return cmdExtendAll(c.set.keys, owner, ttl)
	}
	return cmdExtend(c.resource, owner, ttl)
}

func (c *calls) releaseCmd(owner string) []string {
	if c.set != nil {
		return cmdReleaseAll(c.set.keys, owner)
	}
	return cmdRelease(c.resource, owner)
}

// tally is what a request sent to several nodes found.
type tally struct {
	done, refused int
	unreachable   []NodeFailure
}

func (t tally) answered() int { return t.done + t.refused }

// queued is a server-side wait: the time it may last and its ticket (0: none).
type queued struct {
	timeout time.Duration
	ticket  uint64
}

// ask is DLOCK.ACQUIRE on node as owner; with wait, a server-side wait.
func (c *calls) ask(node int, owner string, ttl time.Duration, wait *queued) reply {
	var blocking time.Duration
	if wait != nil {
		timeout := wait.timeout.Truncate(time.Millisecond)
		if timeout < time.Millisecond {
			timeout = time.Millisecond
		}
		wait = &queued{timeout: timeout, ticket: wait.ticket}
		// A server notices a wait's timeout only at its next tick: its nil may come that late.
		blocking = timeout + transport.Tick
	}
	cmd := c.acquireCmd(owner, ttl, wait)
	r, f := c.b.call(node, cmd, true, blocking)
	if f != nil {
		return reply{failure: f}
	}
	if r == nil {
		return reply{}
	}
	if token, ok := tokenOf(r); ok {
		return reply{token: token}
	}
	return reply{failure: &NodeFailure{Node: c.b.nodes[node].Name(), Reason: fmt.Sprintf("unexpected reply %v", r)}}
}

// fence is DLOCK.FENCE of token as owner (with PX ttl when the commit starts the lease, ttl >
// 0): nil when committed, else why not.
func (c *calls) fence(node int, owner string, token uint64, ttl time.Duration) *NodeFailure {
	r, f := c.b.call(node, c.fenceCmd(owner, token, ttl), true, 0)
	if f != nil {
		return f
	}
	if isOne(r) {
		return nil
	}
	return &NodeFailure{Node: c.b.nodes[node].Name(), Reason: "fence refused: lock no longer held"}
}

// commit is the commit a hold owes (commit.go): DLOCK.FENCE of token as owner, PX ttl, on the
// holding nodes in parallel, each answer fed to the machine until its outcome is decided:
// whether a quorum (needed) committed it, and rest, which waits for the later answers.
func (c *calls) commit(owner string, token uint64, ttl time.Duration, holding []int, needed int) (bool, func()) {
	machine, asked := startCommit(len(c.b.nodes), needed, token, holding)
	answers := make(chan fenced, len(asked))
	for _, n := range asked {
		n := n
		c.b.shared.workers.run(func() {
			answers <- fenced{node: n, committed: c.fence(n, owner, token, ttl) == nil}
		})
	}
	got := 0
	for ; got < len(asked) && machine.outcome == commitPending; got++ {
		a := <-answers
		machine.onFenced(a.node, a.committed)
	}
	rest := func() {
		for ; got < len(asked); got++ {
			<-answers
		}
	}
	return machine.outcome == commitCommitted, rest
}

// fenced is one node's answer to a commit: committed, or not.
type fenced struct {
	node      int
	committed bool
}

// renew is DLOCK.EXTEND on one node (the renewal of a lock held on one node).
func (c *calls) renew(node int, owner string, ttl time.Duration) bool {
	r, f := c.b.call(node, c.extendCmd(owner, ttl), true, 0)
	return f == nil && isOne(r)
}

// everywhere sends cmd to nodes in parallel; read tells a reply that did what was asked.
func (c *calls) everywhere(nodes []int, cmd []string, acked bool, read func(interface{}) bool) tally {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var t tally
	for _, n := range nodes {
		n := n
		wg.Add(1)
		c.b.shared.workers.run(func() {
			defer wg.Done()
			r, f := c.b.call(n, cmd, acked, 0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case f != nil:
				t.unreachable = append(t.unreachable, *f)
			case read(r):
				t.done++
			default:
				t.refused++
			}
		})
	}
	wg.Wait()
	return t
}

// extend is DLOCK.EXTEND everywhere: the new end of validity if the kind's quorum extended
// within it, else the tally.
func (c *calls) extend(owner string, ttl time.Duration) (time.Time, tally, bool) {
	started := time.Now()
	t := c.everywhere(c.b.everywhere(), c.extendCmd(owner, ttl), true, isOne)
	left, ok := c.b.validity(ttl, started)
	return time.Now().Add(left), t, ok && t.done >= c.b.needed(c.kind)
}

// reenter is DLOCK.ACQUIRE ... REENTRANT by the holder everywhere: one more hold, the TTL
// reset; the new end of validity if the kind's quorum granted it within it, else the tally.
func (c *calls) reenter(owner string, ttl time.Duration) (time.Time, tally, bool) {
	started := time.Now()
	granted := func(r interface{}) bool { _, ok := tokenOf(r); return ok }
	t := c.everywhere(c.b.everywhere(), cmdAcquire(c.resource, owner, ttl, c.kind, true), true, granted)
	left, ok := c.b.validity(ttl, started)
	return time.Now().Add(left), t, ok && t.done >= c.b.needed(c.kind)
}

// release is DLOCK.RELEASE (a set's RELEASEALL) of owner on nodes: frees one hold of its
// grants, withdraws its waits.
func (c *calls) release(owner string, nodes []int) tally {
	return c.everywhere(nodes, c.releaseCmd(owner), false, released)
}

// proclaim is DLOCK.PROCLAIM everywhere: owner's lock with token held as newOwner from now on.
func (c *calls) proclaim(owner string, token uint64, newOwner string) tally {
	return c.everywhere(c.b.everywhere(), cmdProclaim(c.resource, owner, token, newOwner), true, isOne)
}

// nodeAnswer is one node's reply, or why none.
type nodeAnswer struct {
	reply   interface{}
	failure *NodeFailure
}

// status is DLOCK.STATUS on every node, in parallel: each node's answer, in node order.
func (c *calls) status() []nodeAnswer {
	out := make([]nodeAnswer, len(c.b.nodes))
	var wg sync.WaitGroup
	for _, n := range c.b.everywhere() {
		n := n
		wg.Add(1)
		c.b.shared.workers.run(func() {
			defer wg.Done()
			r, f := c.b.call(n, cmdStatus(c.resource), false, 0)
			out[n] = nodeAnswer{reply: r, failure: f}
		})
	}
	wg.Wait()
	return out
}

// observe is DLOCK.OBSERVE on node after the holder it last reported (nil: at once), blocking
// on the node up to wait.
func (c *calls) observe(node int, after *seen, wait time.Duration) nodeAnswer {
	// A server notices a blocked call's timeout only at its next tick: its reply may come that late.
	r, f := c.b.call(node, cmdObserve(c.resource, after, wait), false, wait+transport.Tick)
	return nodeAnswer{reply: r, failure: f}
}

// released reads a RELEASE (1 or 0) or a set's RELEASEALL (how many of its keys were held).
func released(r interface{}) bool {
	n, ok := r.(int64)
	return ok && n >= 1
}

// lockLost is the error of a lease lost (an extension refused, the renew deadline passed).
func (c *calls) lockLost() error {
	return &Error{Kind: ErrLockLost, Resource: c.resource, op: opExtend}
}
