package dlock

import (
	"context"
	"sync"
	"time"
)

// Takes a lock over the network (client/src/driver.rs): runs attempts (attempt.go, every
// decision) by sending what their actions ask through the node calls (calls.go), feeding the
// replies back, and keeping the time.
//
//   - Without a wait, one attempt that does not wait on the nodes; with one, attempts run until
//     one holds or anotherAttempt says stop: queued on the nodes (the default), or without a
//     server wait and with the retry pause between attempts (retry mode).
//   - Queue mode draws one ticket per acquisition (wall-clock µs); with one node no ticket
//     (plain FIFO, and a grant that is never committed must not be revocable).
//   - Round r of an attempt asks as owner <base>:<r>, each attempt under a new base, so a late
//     RELEASE of an abandoned round cannot free a later one. A campaign appends " <value>" (its
//     label): the value then travels with every grant (docs/election.md).
//   - A queued attempt keeps the deadline itself (a node notices a wait's timeout only at its
//     next tick) and gets at least one whole call, so a zero wait still asks once and hears the
//     answer.
//   - An attempt that ends without the lock (or whose context is done) withdraws its round
//     before answering; requests still out end in the background, where onLate says which
//     grants they bring to release.

// granted is a lock won: its owner, token, end of validity, the signal its release gives the
// acquisition's requests still out, and the nodes that granted in the round it was held (those
// a commit owed goes to, commit.go).
type granted struct {
	owner      string
	token      uint64
	validUntil time.Time
	stale      *signal
	holding    []int
}

// signal is a one-way flag: raised once, read any time.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }
func (s *signal) raise() { s.once.Do(func() { close(s.ch) }) }
func (s *signal) raised() bool {
	select {
	case <-s.ch:
		return true
	default:
		return false
	}
}

// acquirer is one acquisition call.
type acquirer struct {
	calls    *calls
	ttl      time.Duration
	deadline time.Time
	policy   policy
	ctx      context.Context
	ticket   uint64
	owners   func() (string, error)
	label    string // appended to every round's owner: empty, or " <value>" for a campaign
	// final: nodes whose connection setup met a refusal waiting cannot cure (Failure.Refused):
	// not connected to again within this call, their refusal the answer to every ask.
	final map[int]NodeFailure
}

func newAcquirer(ctx context.Context, c *calls, ttl, wait time.Duration, p policy) *acquirer {
	a := &acquirer{calls: c, ttl: ttl, deadline: time.Now().Add(wait), policy: p, ctx: ctx, owners: c.b.cfg.mutex.owner,
		final: map[int]NodeFailure{}}
	if p.queue && len(c.b.nodes) > 1 {
		a.ticket = drawTicket()
	}
	return a
}

// labelled makes a the call of a campaign for value: owners "<base>:<round> <value>", the base
// always the client's own random one (a base of WithGenValueFunc could hold a space, which
// would split the candidate id).
func (a *acquirer) labelled(value string) *acquirer {
	a.owners = func() (string, error) { return newOwner(), nil }
	if value != "" {
		a.label = " " + value
	}
	return a
}

// run makes attempts until one holds (at most one when once): the lock, or why not and how many
// attempts were made. ErrInvalidArgument once two nodes turn out to reach one server
// (transport/identity.go): before any node is asked, or found meanwhile, whatever the nodes
// said (a lock won is given back).
func (a *acquirer) run(once bool) (*granted, *attemptError, int) {
	b := a.calls.b
	for attempts := 1; ; attempts++ {
		if refused := a.refused(); refused != nil {
			return nil, refused, attempts
		}
		base, err := a.owners()
		if err != nil {
			return nil, &attemptError{kind: err}, attempts
		}
		won, failure := newRunning(a, base).run()
		if failure == nil {
			b.meetAll(b.cfg.timeout) // a manager's first lock only
			if refused := a.refused(); refused != nil {
				won.stale.raise()
				a.calls.release(won.owner, a.reachable(b.everywhere()))
				return nil, refused, attempts
			}
			return won, nil, attempts
		}
		if refused := a.refused(); refused != nil {
			return nil, refused, attempts // no other attempt can change it
		}
		pause := a.calls.b.retryPause()
		outOfTime := time.Now().Add(pause).After(a.deadline)
		retries := a.calls.b.cfg.retryCount
		if retries < 0 {
			retries = int(^uint(0) >> 1)
		}
		if once || a.ctx.Err() != nil || !anotherAttempt(a.policy, failure, outOfTime, attempts, retries) {
			return nil, failure, attempts
		}
		select {
		case <-time.After(pause):
		case <-a.ctx.Done():
			return nil, failure, attempts
		}
	}
}

// refused is the failure of every acquisition once two nodes turned out to reach one server:
// an invalid argument (the node list), returned as it is by toError.
func (a *acquirer) refused() *attemptError {
	if why := a.calls.b.refusal(); why != "" {
		return &attemptError{kind: invalid(why)}
	}
	return nil
}

// lease: held; what the lease comes to (attempt.go lease), counted from the request that last
// set the TTL.
func (a *acquirer) lease(owner string, token uint64, leaseFrom time.Time, stale *signal, holding []int) *granted {
	b := a.calls.b
	left, ok := b.validity(a.ttl, leaseFrom)
	verdict := lease(len(b.nodes), left, ok, a.ttl, false)
	if verdict == leaseRenew {
		renewedFrom := time.Now()
		if a.calls.renew(0, owner, a.ttl) {
			left, ok = b.validity(a.ttl, renewedFrom)
		} else {
			ok = false
		}
		verdict = lease(len(b.nodes), left, ok, a.ttl, true)
	}
	if verdict == leaseHeld {
		return &granted{owner: owner, token: token, validUntil: time.Now().Add(left), stale: stale, holding: holding}
	}
	stale.raise()
	a.calls.release(owner, a.reachable(b.everywhere())) // before answering, as any failure before the deadline
	return nil
}

// input is one thing that came back: a reply to an ask, to a commit, or a pause's end.
type input struct {
	kind    actionKind // actAsk: a reply; actFence: a commit's; actAskAgain: a pause over
	node    int
	round   int
	reply   reply
	failure *NodeFailure
}

// running is one attempt while its requests are out.
type running struct {
	a         *acquirer
	base      string
	leaseFrom time.Time
	stale     *signal // raised when the holder releases
	wake      chan struct{}

	mu      sync.Mutex // guards what the requests' goroutines touch
	core    *attempt
	initial []action
	inputs  []input
	out     int // requests and pauses not back yet
	over    bool
}

func newRunning(a *acquirer, base string) *running {
	core, actions := startAttempt(len(a.calls.b.nodes), a.calls.b.needed(a.calls.kind), a.policy)
	return &running{a: a, base: base, core: core, initial: actions, leaseFrom: time.Now(), stale: newSignal(), wake: make(chan struct{}, 1)}
}

func (r *running) run() (*granted, *attemptError) {
	actions := r.initial
	// A queued attempt gets at least one whole call, so a zero wait still asks once and hears
	// the answer.
	endAt := r.a.deadline
	if least := time.Now().Add(r.a.calls.b.cfg.timeout); least.After(endAt) {
		endAt = least
	}
	timer := time.NewTimer(time.Until(endAt))
	defer timer.Stop()
	defer r.end()
	for {
		if won, failure, done := r.perform(actions); done {
			return won, failure
		}
		actions = r.next(endAt, timer)
	}
}

// end: the attempt is over. Replies that came in meanwhile and were not fed (during the
// withdrawal of its round, say) go to onLate, as later ones do: a grant among them is released.
func (r *running) end() {
	r.mu.Lock()
	r.over = true
	pending := r.inputs
	r.inputs = nil
	var late []action
	for _, in := range pending {
		if in.kind == actAsk {
			late = append(late, r.core.onLate(in.node, in.round, in.reply, r.stale.raised())...)
		}
	}
	r.mu.Unlock()
	for _, act := range late {
		owner, nodes := r.owner(act.round), act.nodes
		r.a.calls.b.spawn(func() { r.a.calls.release(owner, nodes) })
	}
}

func (r *running) owner(round int) string { return roundOwner(r.base, round) + r.a.label }

// perform does what actions ask; the attempt's end, if one of them is it.
func (r *running) perform(actions []action) (*granted, *attemptError, bool) {
	calls := r.a.calls
	failing := false // then the round is withdrawn before answering
	for _, act := range actions {
		failing = failing || act.kind == actFailed
	}
	for _, act := range actions {
		switch act.kind {
		case actAsk:
			r.leaseFrom = time.Now()
			for _, n := range act.nodes {
				r.ask(n, act.round)
			}
		case actAskAgain:
			if act.afterPause {
				r.pause(act.node, act.round)
			} else {
				r.ask(act.node, act.round)
			}
		case actFence:
			if r.a.policy.queue {
				r.leaseFrom = time.Now() // FENCE ... PX starts the lease afresh
			}
			for _, n := range act.nodes {
				r.fence(n, act.round, act.token)
			}
		case actRelease:
			owner, nodes := r.owner(act.round), r.a.reachable(act.nodes)
			if failing {
				calls.release(owner, nodes)
			} else {
				calls.b.spawn(func() { calls.release(owner, nodes) })
			}
		case actHeld:
			r.end() // the machine's grants stay as they were: the holding nodes
			if won := r.a.lease(r.owner(act.round), act.token, r.leaseFrom, r.stale, r.core.machine.GrantedNodes()); won != nil {
				return won, nil, true
			}
			return nil, &attemptError{kind: ErrValidityExpired}, true
		case actFailed:
			r.told(act.err)
			r.end() // the core withdrew the round just before
			return nil, act.err, true
		}
	}
	return nil, nil, false
}

// track runs a request; its answer goes to the attempt, or, once it is over, to onLate.
func (r *running) track(request func() input) {
	r.mu.Lock()
	r.out++
	r.mu.Unlock()
	r.a.calls.b.spawn(func() {
		in := request()
		r.mu.Lock()
		r.out--
		if !r.over {
			r.inputs = append(r.inputs, in)
			r.mu.Unlock()
			select {
			case r.wake <- struct{}{}:
			default:
			}
			return
		}
		var late []action
		if in.kind == actAsk {
			late = r.core.onLate(in.node, in.round, in.reply, r.stale.raised())
		}
		r.mu.Unlock()
		for _, act := range late {
			r.a.calls.release(r.owner(act.round), act.nodes)
		}
	})
}

// ask: ACQUIRE (with WAIT ... [TICKET] in queue mode) on node as the owner of round.
func (r *running) ask(node, round int) {
	if refused, ok := r.a.final[node]; ok {
		r.track(func() input { return input{kind: actAsk, node: node, round: round, reply: reply{failure: &refused}} })
		return
	}
	var wait *queued
	if r.a.policy.queue {
		wait = &queued{timeout: time.Until(r.a.deadline), ticket: r.a.ticket}
	}
	owner, ttl := r.owner(round), r.a.ttl
	r.track(func() input {
		return input{kind: actAsk, node: node, round: round, reply: r.a.calls.ask(node, owner, ttl, wait)}
	})
}

func (r *running) pause(node, round int) {
	pause := r.a.calls.b.retryPause()
	r.track(func() input {
		time.Sleep(pause)
		return input{kind: actAskAgain, node: node, round: round}
	})
}

// fence: FENCE (with PX ttl in queue mode) on node.
func (r *running) fence(node, round int, token uint64) {
	var ttl time.Duration
	if r.a.policy.queue {
		ttl = r.a.ttl
	}
	owner := r.owner(round)
	r.track(func() input {
		return input{kind: actFence, node: node, round: round, failure: r.a.calls.fence(node, owner, token, ttl)}
	})
}

// next is the next input into the core; it waits for one, the end, or the context.
func (r *running) next(endAt time.Time, timer *time.Timer) []action {
	for {
		r.mu.Lock()
		if len(r.inputs) > 0 {
			in := r.inputs[0]
			r.inputs = r.inputs[1:]
			r.mu.Unlock()
			return r.feed(in)
		}
		out := r.out
		r.mu.Unlock()
		if r.a.ctx.Err() != nil || out == 0 || (r.a.policy.queue && !time.Now().Before(endAt)) {
			return r.core.onDeadline()
		}
		var ends <-chan time.Time
		if r.a.policy.queue {
			ends = timer.C
		}
		select {
		case <-r.wake:
		case <-ends:
		case <-r.a.ctx.Done():
		}
	}
}

func (r *running) feed(in input) []action {
	if r.a.calls.b.refusal() != "" {
		// Two nodes reach one server: no reply counts, a grant brought is given back, and the
		// round is withdrawn everywhere, as at the deadline.
		var late []action
		if in.kind == actAsk {
			late = r.core.onLate(in.node, in.round, in.reply, false)
		}
		return append(late, r.core.onDeadline()...)
	}
	switch in.kind {
	case actAsk:
		if f := in.reply.failure; f != nil && f.Refused != "" {
			r.a.final[in.node] = *f
		}
		return r.core.onReply(in.node, in.round, in.reply, !time.Now().Before(r.a.deadline))
	case actFence:
		_, valid := r.a.calls.b.validity(r.a.ttl, r.leaseFrom)
		return r.core.onFenced(in.node, in.round, in.failure, valid)
	}
	return r.core.onPauseOver(in.node, in.round)
}
