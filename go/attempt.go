package dlock

import (
	"time"

	"dlock.dev/dlock/transport"
)

// One attempt to take a lock, free of I/O (client/src/attempt.rs, ported): the acquisition
// machine (acquisition.go) and every decision the driver takes around it. Replies go in,
// actions come out; driver.go does the sending, the timers and the background work.
// conformance/attempts.json (with replies.json, leases.json, retries.json) pins each decision
// for every client.
//
//   - How a reply counts (classify): a grant; busy, the lock held by others (nil, or a queued
//     wait that ran past the deadline unanswered: a server notices a wait's timeout only at its
//     next tick, so the client's own time for the call may run out first); a node failure; or
//     the kind refused (WRONGKIND: the attempt ends, asking again cannot change it).
//   - Asking again: a failed node is asked again; a queued wait after the retry pause while its
//     round lasts (the machine counts the node out meanwhile), a plain ACQUIRE at once, once
//     per round, while a quorum has not granted yet (its failure counts only if the repeat
//     fails too).
//   - Once held, requests still out stay out: a grant they bring is the holder's and goes with
//     the holder's RELEASE; a grant of an earlier round, of an attempt that did not hold, or
//     that comes after the holder released is released at once (onLate).
//   - Why it failed (attemptError): too many failed nodes for a quorum is no quorum; a
//     one-round commit that missed is no quorum, or expired once validity ran out; otherwise
//     contended.

// policy is how an attempt asks the nodes: queued on them (ACQUIRE ... WAIT, round after round
// until the deadline, the commit starting the lease afresh), or one plain ACQUIRE per node in
// one round (TryLock, retry mode). The driver runs the one-round attempt without its commit
// (conformance/attempts.json "no_wait_uncommitted"): a commit it owes is paid when the token is
// first read (commit.go); the one-round attempt with the commit ("no_wait") stays pinned by the
// table.
type policy struct {
	queue  bool
	commit bool
}

var queuePolicy = policy{queue: true, commit: true}

// reply is a node's answer to an ask: a token, nil, or why there is none.
type reply struct {
	token   uint64 // > 0: granted
	failure *NodeFailure
}

// outcomeKind is how a reply counts.
type outcomeKind int

const (
	outNone outcomeKind = iota
	outGranted
	outBusy
	outFailed
	outWrongKind
	// outInvalid: the node refused an argument of the request.
	outInvalid
)

type outcome struct {
	kind    outcomeKind
	token   uint64
	failure NodeFailure
}

// attemptError is why one attempt failed; the caller retries or turns it into an Error.
type attemptError struct {
	kind     error // ErrContended, ErrNoQuorum, ErrWrongKind, ErrInvalidArgument, ErrValidityExpired
	failures []NodeFailure
	// final: nodes refused for the call (Failure.Refused) left a quorum out of reach: no other
	// attempt.
	final bool
}

type actionKind int

const (
	// actAsk: ask nodes as the owner of round, a new round whose lease counts from here.
	actAsk actionKind = iota + 1
	// actAskAgain: ask node again, at once or after the retry pause (then onPauseOver says
	// whether it still goes).
	actAskAgain
	actFence
	actRelease
	actHeld
	actFailed
)

type action struct {
	kind       actionKind
	round      int
	token      uint64
	nodes      []int
	node       int
	afterPause bool
	err        *attemptError
}

// classify is how a reply to an ask counts, given the policy and whether the acquire's
// deadline had passed when it came.
func classify(r reply, p policy, pastDeadline bool) outcome {
	switch {
	case r.failure == nil && r.token > 0:
		return outcome{kind: outGranted, token: r.token}
	case r.failure == nil:
		return outcome{kind: outBusy}
	case r.failure.Refused == transport.RefusedDatabase:
		return outcome{kind: outInvalid, failure: *r.failure}
	case isWrongKind(*r.failure):
		return outcome{kind: outWrongKind, failure: *r.failure}
	case isRefusedArgument(*r.failure):
		return outcome{kind: outInvalid, failure: *r.failure}
	case r.failure.NoReply && p.queue && pastDeadline:
		return outcome{kind: outBusy}
	}
	return outcome{kind: outFailed, failure: *r.failure}
}

// leaseVerdict is what a held lock comes to.
type leaseVerdict int

const (
	leaseHeld leaseVerdict = iota + 1
	// leaseRenew: one node, whose grant may have come long after the wait was sent: renew the
	// TTL once (EXTEND) and count validity from the renewal.
	leaseRenew
	leaseExpired
)

// lease is what a lock held on nodes nodes comes to, given the validity left (ok false: none)
// counted from the request that last set its TTL; renewed: after the one renewal.
func lease(nodes int, left time.Duration, ok bool, ttl time.Duration, renewed bool) leaseVerdict {
	switch {
	case nodes == 1 && !renewed && (!ok || left*2 < ttl):
		return leaseRenew
	case ok:
		return leaseHeld
	}
	return leaseExpired
}

// anotherAttempt: whether a failed attempt is followed by another (after the retry pause): not
// when the kind or an argument was refused, nor when nodes refused for the call left a quorum
// out of reach, nor when a queued attempt was contended (it waited to the
// deadline), nor out of time (the pause would end past the deadline) or of retries.
func anotherAttempt(p policy, err *attemptError, outOfTime bool, attempts, retryCount int) bool {
	if err.final || err.kind == ErrWrongKind || err.kind == ErrInvalidArgument || (err.kind == ErrContended && p.queue) {
		return false
	}
	return !outOfTime && attempts <= retryCount
}

// attempt is one attempt: the machine, and what the driver needs to know of this round.
type attempt struct {
	nodes       int
	policy      policy
	machine     *acquisition
	outcomes    []outcome // this round, each node's last answer
	askedAgain  []bool    // this round, asked again at once
	uncommitted []NodeFailure
	heldRound   int          // -1 until held
	final       map[int]bool // nodes whose connection setup met a refusal (Failure.Refused)
}

// startAttempt is round 0 of an attempt held once needed of nodes nodes committed.
func startAttempt(nodes, needed int, p policy) (*attempt, []action) {
	var machine *acquisition
	var steps []step
	if p.queue {
		machine, steps = startAcquisition(nodes, needed)
	} else {
		machine, steps = startOnce(nodes, needed, p.commit)
	}
	a := &attempt{nodes: nodes, policy: p, machine: machine, heldRound: -1, final: map[int]bool{},
		outcomes: make([]outcome, nodes), askedAgain: make([]bool, nodes)}
	return a, a.act(steps, true)
}

func (a *attempt) round() int   { return a.machine.Round() }
func (a *attempt) isOver() bool { return a.machine.IsOver() }

// onReply: node's reply to its ask of round.
func (a *attempt) onReply(node, round int, r reply, pastDeadline bool) []action {
	if a.isOver() {
		return a.onLate(node, round, r, false)
	}
	out := classify(r, a.policy, pastDeadline)
	ev := event{Kind: evUnavailable, Node: node, Round: round}
	if out.kind == outGranted {
		ev = event{Kind: evGranted, Node: node, Round: round, Token: out.token}
	}
	if round != a.round() || node < 0 || node >= a.nodes {
		return a.act(a.machine.On(ev), true) // a stale grant is released
	}
	if out.kind == outWrongKind {
		return a.giveUp(&attemptError{kind: ErrWrongKind, failures: []NodeFailure{out.failure}})
	}
	if out.kind == outInvalid {
		return a.giveUp(&attemptError{kind: ErrInvalidArgument, failures: []NodeFailure{out.failure}})
	}
	a.outcomes[node] = out
	if out.kind == outFailed && out.failure.Refused == transport.RefusedSetup {
		return a.refusedForGood(node, ev)
	}
	failed := out.kind == outFailed
	if failed && a.askAtOnce(node) {
		return []action{{kind: actAskAgain, node: node, round: round}} // the repeat counts instead
	}
	actions := a.act(a.machine.On(ev), true)
	if failed && a.policy.queue && !a.isOver() {
		actions = append(actions, action{kind: actAskAgain, node: node, round: round, afterPause: true})
	}
	return actions
}

// refusedForGood: a node whose connection setup met a refusal waiting cannot cure is never
// asked again; once such nodes leave a quorum out of reach, the call ends at once.
func (a *attempt) refusedForGood(node int, ev event) []action {
	a.final[node] = true
	if a.nodes-len(a.final) < a.machine.needed {
		var failures []NodeFailure
		for _, o := range a.outcomes {
			if o.kind == outFailed {
				failures = append(failures, o.failure)
			}
		}
		return a.giveUp(&attemptError{kind: ErrNoQuorum, failures: failures, final: true})
	}
	return a.act(a.machine.On(ev), true)
}

// askAtOnce: a plain ACQUIRE that failed is repeated at once, once per round, unless a quorum
// granted without it.
func (a *attempt) askAtOnce(node int) bool {
	if a.policy.queue || a.askedAgain[node] || len(a.machine.GrantedNodes()) >= a.machine.needed {
		return false
	}
	a.askedAgain[node] = true
	return true
}

// onPauseOver: the retry pause of an ask_again is over; the ask goes if its round still lasts.
func (a *attempt) onPauseOver(node, round int) []action {
	if a.isOver() || round != a.round() {
		return nil
	}
	return []action{{kind: actAskAgain, node: node, round: round}}
}

// onFenced: node's reply to the commit of round, committed (failure nil) or why not; valid:
// validity is left now.
func (a *attempt) onFenced(node, round int, failure *NodeFailure, valid bool) []action {
	if failure != nil && round == a.round() && !a.isOver() {
		a.uncommitted = append(a.uncommitted, *failure)
	}
	return a.act(a.machine.On(event{Kind: evFenced, Node: node, Round: round, Committed: failure == nil}), valid)
}

// onDeadline: the attempt's time ran out (queued attempts only); its round is withdrawn.
func (a *attempt) onDeadline() []action {
	if a.isOver() {
		return nil
	}
	return a.giveUp(a.verdict(true))
}

// onLate: a reply after the attempt ended, or after the holder released (released): a grant is
// released unless it is the holder's.
func (a *attempt) onLate(node, round int, r reply, released bool) []action {
	if r.failure != nil || r.token == 0 {
		return nil
	}
	if a.heldRound == round && !released {
		return nil // the holder's: its RELEASE frees it
	}
	return []action{{kind: actRelease, round: round, nodes: []int{node}}}
}

// giveUp ends the attempt now: its round withdrawn everywhere.
func (a *attempt) giveUp(err *attemptError) []action {
	var actions []action
	for _, s := range a.machine.Abandon() {
		if s.Kind == stepRelease {
			actions = append(actions, action{kind: actRelease, round: s.Round, nodes: s.Nodes})
		}
	}
	return append(actions, action{kind: actFailed, err: err})
}

// act turns the machine's steps into actions.
func (a *attempt) act(steps []step, valid bool) []action {
	actions := make([]action, 0, len(steps))
	for _, s := range steps {
		switch s.Kind {
		case stepWait:
			a.outcomes = make([]outcome, a.nodes)
			a.askedAgain = make([]bool, a.nodes)
			a.uncommitted = nil
			actions = append(actions, action{kind: actAsk, round: s.Round, nodes: s.Nodes})
		case stepFence:
			actions = append(actions, action{kind: actFence, round: s.Round, token: s.Token, nodes: s.Nodes})
		case stepRelease:
			actions = append(actions, action{kind: actRelease, round: s.Round, nodes: s.Nodes})
		case stepHeld:
			a.heldRound = a.round()
			actions = append(actions, action{kind: actHeld, round: a.round(), token: s.Token})
		case stepFailed:
			actions = append(actions, action{kind: actFailed, err: a.verdict(valid)})
		}
	}
	return actions
}

// verdict is why this round came to nothing (see the notes above).
func (a *attempt) verdict(valid bool) *attemptError {
	var failures []NodeFailure
	for _, o := range a.outcomes {
		if o.kind == outFailed {
			failures = append(failures, o.failure)
		}
	}
	if len(a.uncommitted) > 0 {
		if !valid {
			return &attemptError{kind: ErrValidityExpired}
		}
		return &attemptError{kind: ErrNoQuorum, failures: append(failures, a.uncommitted...)}
	}
	if a.nodes-len(failures) < a.machine.needed {
		return &attemptError{kind: ErrNoQuorum, failures: failures}
	}
	return &attemptError{kind: ErrContended}
}
