package dlock

// The decisions of one acquisition across N nodes as a pure state machine
// (client/src/acquisition.rs, the machine the model checker explores;
// conformance/acquisition.json): replies go in, the next steps come out.
//
// Round by round (docs/protocol.md §5):
//  1. Wait on every node with one ticket (ACQUIRE ... WAIT ... TICKET t), as owner `o:round`.
//  2. With grants from a quorum, commit their largest token with FENCE on the granting nodes.
//     A grant is tentative until committed; a smaller ticket may wound it meanwhile, and the
//     node then refuses the FENCE.
//  3. Committed on the quorum: held. Otherwise release everything of the round and wait again
//     with the same ticket under a new owner name.
//
// With one node there is nothing to commit: the grant is the lock. An attempt that does not
// wait on the nodes runs the same machine for one round only (startOnce): the commit waits
// for every node's answer and covers every node that granted; a commit that misses fails;
// with fencing off the grants are the lock.

// eventKind names what happened on a node.
type eventKind int

const (
	// evGranted: the ask of Round was granted with Token.
	evGranted eventKind = iota + 1
	// evUnavailable: the ask ended without a grant.
	evUnavailable
	// evFenced: the commit of Round answered (Committed).
	evFenced
)

// event is one reply fed into the machine.
type event struct {
	Kind      eventKind
	Node      int
	Round     int
	Token     uint64
	Committed bool
}

// stepKind names what the machine asks for.
type stepKind int

const (
	// stepWait: ask Nodes as the owner of Round.
	stepWait stepKind = iota + 1
	// stepFence: commit Token on Nodes as the owner of Round.
	stepFence
	// stepRelease: release the owner of Round on Nodes.
	stepRelease
	// stepHeld: held with Token.
	stepHeld
	// stepFailed: the acquisition failed.
	stepFailed
)

// step is one thing for the driver to do.
type step struct {
	Kind  stepKind
	Round int
	Token uint64
	Nodes []int
}

type phase int

const (
	phaseWaiting phase = iota
	phaseCommitting
	phaseHeld
	phaseFailed
)

// acquisition is one acquisition, possibly over several rounds.
type acquisition struct {
	nodes, needed int
	once, commit  bool
	round         int
	granted       []uint64 // 0: no grant this round (tokens start at 1)
	unavailable   []bool
	phase         phase
	token         uint64
	pending       []bool
	committed     []bool
}

func newAcquisition(nodes, needed int, once, commit bool) (*acquisition, []step) {
	if needed < 1 {
		needed = 1
	}
	if needed > nodes && nodes > 0 {
		needed = nodes
	}
	a := &acquisition{nodes: nodes, needed: needed, once: once, commit: commit,
		granted: make([]uint64, nodes), unavailable: make([]bool, nodes)}
	return a, []step{{Kind: stepWait, Round: 0, Nodes: upTo(nodes)}}
}

// startAcquisition is round 0 of an acquisition held once needed nodes committed.
func startAcquisition(nodes, needed int) (*acquisition, []step) {
	return newAcquisition(nodes, needed, false, true)
}

// startOnce is one round without a server wait: held once needed nodes committed (granted,
// without commit).
func startOnce(nodes, needed int, commit bool) (*acquisition, []step) {
	return newAcquisition(nodes, needed, true, commit)
}

func upTo(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// Round is the current round.
func (a *acquisition) Round() int { return a.round }

// Held is the token, once held.
func (a *acquisition) Held() (uint64, bool) {
	return a.token, a.phase == phaseHeld
}

// IsOver tells a held or failed acquisition.
func (a *acquisition) IsOver() bool { return a.phase == phaseHeld || a.phase == phaseFailed }

// Abandon gives up from outside (a deadline, a refused kind): release everything of this round.
func (a *acquisition) Abandon() []step {
	if a.IsOver() {
		return nil
	}
	return a.fail()
}

// On feeds one reply. Replies of earlier rounds are stale: ignored, except a grant, which is
// released at once (it would otherwise hold the lock on that node until its TTL).
func (a *acquisition) On(e event) []step {
	if e.Node < 0 || e.Node >= a.nodes {
		return nil
	}
	if e.Round != a.round {
		if e.Kind == evGranted && e.Round < a.round {
			return []step{{Kind: stepRelease, Round: e.Round, Nodes: []int{e.Node}}}
		}
		return nil
	}
	switch e.Kind {
	case evGranted:
		a.granted[e.Node] = e.Token
		if a.phase != phaseWaiting {
			return nil // a late grant: released with everything else at the end
		}
		return a.commitWhenReady()
	case evUnavailable:
		return a.onUnavailable(e.Node)
	case evFenced:
		return a.onFenced(e.Node, e.Committed)
	}
	return nil
}

// GrantedNodes are the nodes that granted this round.
func (a *acquisition) GrantedNodes() []int {
	var nodes []int
	for n, t := range a.granted {
		if t != 0 {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// commitWhenReady: with grants from a quorum (and, in one round only, every node's answer in,
// so that the commit covers every node that granted), commit the largest token, or hold it.
func (a *acquisition) commitWhenReady() []step {
	grants := a.GrantedNodes()
	if len(grants) < a.needed || (a.once && !a.allAnswered()) {
		return nil
	}
	var top uint64
	for _, n := range grants {
		if a.granted[n] > top {
			top = a.granted[n]
		}
	}
	if a.nodes == 1 || !a.commit {
		return a.hold(top)
	}
	a.phase = phaseCommitting
	a.token = top
	a.pending = make([]bool, a.nodes)
	a.committed = make([]bool, a.nodes)
	for _, n := range grants {
		a.pending[n] = true
	}
	return []step{{Kind: stepFence, Round: a.round, Token: top, Nodes: grants}}
}

func (a *acquisition) allAnswered() bool {
	for n := range a.granted {
		if a.granted[n] == 0 && !a.unavailable[n] {
			return false
		}
	}
	return true
}

func (a *acquisition) onUnavailable(node int) []step {
	a.unavailable[node] = true
	possible := 0
	for _, u := range a.unavailable {
		if !u {
			possible++
		}
	}
	if a.phase == phaseWaiting && possible < a.needed {
		return a.fail()
	}
	if a.phase == phaseWaiting && a.once {
		return a.commitWhenReady() // maybe the last answer awaited
	}
	return nil
}

// fail: no quorum this time; release everything of this round and give up.
func (a *acquisition) fail() []step {
	a.phase = phaseFailed
	return []step{a.releaseAll(), {Kind: stepFailed}}
}

func (a *acquisition) onFenced(node int, ok bool) []step {
	if a.phase != phaseCommitting || !a.pending[node] {
		return nil // not committing, or a duplicate
	}
	a.pending[node] = false
	a.committed[node] = ok
	count, pending := 0, 0
	for n := range a.committed {
		if a.committed[n] {
			count++
		}
		if a.pending[n] {
			pending++
		}
	}
	if count >= a.needed {
		return a.hold(a.token)
	}
	if count+pending < a.needed {
		if a.once {
			return a.fail()
		}
		return a.nextRound()
	}
	return nil
}

// hold: held. Waits still queued on nodes that did not grant stay (a late grant there is the
// holder's too).
func (a *acquisition) hold(token uint64) []step {
	a.phase = phaseHeld
	a.token = token
	return []step{{Kind: stepHeld, Token: token}}
}

// nextRound: the commit missed the quorum; release everything of this round, wait again.
func (a *acquisition) nextRound() []step {
	release := a.releaseAll()
	a.round++
	a.granted = make([]uint64, a.nodes)
	a.unavailable = make([]bool, a.nodes)
	a.phase = phaseWaiting
	return []step{release, {Kind: stepWait, Round: a.round, Nodes: upTo(a.nodes)}}
}

func (a *acquisition) releaseAll() step {
	return step{Kind: stepRelease, Round: a.round, Nodes: upTo(a.nodes)}
}
