package dlock

// The commit a hold may owe (client/src/commit.rs, ported; conformance/commits.json): the
// machine, free of I/O.
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
