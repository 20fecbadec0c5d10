package dlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Following an election (docs/election.md, client/src/election_watch.rs): each node is asked
// DLOCK.OBSERVE name AFTER token OWNER owner, which it answers when its holder differs from the
// one named (or the holder's lease ends), so nobody polls; the answers go to one goroutine that
// keeps what each node holds and sends the leader (by leaderView) each time it changes, in
// order.

// observeFor is how long one DLOCK.OBSERVE may block on a node before it is asked again. It
// also bounds how long a node's goroutine outlives its observer: a blocked call cannot be
// interrupted through the Pool seam (Conn.Do honours deadlines only), so it ends when the node
// answers.
const observeFor = 10 * time.Second

// Change is one change of who leads: Leader (nil: nobody leads), or Err (an ErrNoQuorum error:
// too few nodes answered to tell, the leader follows once they do; ErrWrongKind: the name is a
// shared lock or a semaphore).
type Change struct {
	Leader *Leader
	Err    error
}

// report is what one node said it holds, or why it could not say.
type report struct {
	node int
	held *seen
	err  error
}

// Observe follows who leads name: the returned channel gets the leader first, then each change
// in order (nobody leads after a resignation or an expiry nobody took over; on several nodes a
// handoff passes through nobody while the new grant is committed), and is closed once ctx is
// done or the manager is closed. A channel, as etcd's Election.Observe: it fits a select beside the caller's other
// events, and ctx ends it as it ends everything else. Bad input is refused before any node is
// asked.
func (m *Manager) Observe(ctx context.Context, name string) (<-chan Change, error) {
	if err := m.checkElection(name, ""); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &calls{b: m.b, resource: name, kind: Exclusive}
	reports := make(chan report, len(m.b.nodes))
	var watchers sync.WaitGroup
	for node := range m.b.nodes {
		node := node
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			c.watchNode(ctx, node, reports)
		}()
	}
	ended := make(chan struct{}) // every node's watcher ended: the manager was closed
	go func() {
		watchers.Wait()
		close(ended)
	}()
	changes := make(chan Change)
	go c.gather(ctx, reports, ended, changes)
	return changes, nil
}

// watchNode asks one node again and again, each time after the holder it last reported (after
// a failure, at once again after the retry pause), until ctx is done or the manager closed.
// Each answer is reported, even the same holder after a TIMEOUT: gather drops what is no change.
func (c *calls) watchNode(ctx context.Context, node int, out chan<- report) {
	var last **seen // nil: nothing known, ask for the holder at once
	for ctx.Err() == nil && !c.b.isClosed() {
		var after *seen
		if last != nil {
			after = &seen{} // "I saw it free": AFTER 0 OWNER ""
			if *last != nil {
				after = *last
			}
		}
		h, err := c.heard(node, c.observe(node, after, observeFor))
		if c.b.isClosed() {
			// Closed while the OBSERVE was out: its answer is no news (and on go-redis,
			// whose Close also closes the connections in use, it is that failure).
			return
		}
		last = nil
		if err == nil {
			last = &h
		}
		select {
		case out <- report{node: node, held: h, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			pause := c.b.retryPause()
			if errors.Is(err, ErrWrongKind) {
				pause = observeFor // a shared lock or semaphore stays one for long: no busy asking
			}
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return
			}
		}
	}
}

// commitGrace is how long a new leader whose epoch no majority shows yet is held back: a grant
// being committed shows each node's own token for the moment its FENCE takes (a round trip),
// then the epoch on a majority, so sending it at once would send the leader twice for one
// takeover (a smaller epoch, then the committed one). With committed nodes down it stays so,
// and is sent after this. As client/src/election_watch.rs's COMMIT_GRACE.
const commitGrace = 250 * time.Millisecond

// gathered is what each node holds, what was sent, and a new leader held back.
type gathered struct {
	c        *calls
	needed   int
	views    []**seen
	failures []error // why each node could not say (nil: it did)
	heard    []bool
	shown    *Change     // nil until the first change is sent
	pending  *Change     // a new leader held back (nil: none)
	timer    *time.Timer // ends pending's grace (nil while none)
}

// gather keeps each node's holder and sends the leader each time it changes (a new leader whose
// epoch no majority shows yet once a newer report shows it committed, or after commitGrace);
// it closes out when ctx is done or the watchers ended.
func (c *calls) gather(ctx context.Context, reports <-chan report, ended <-chan struct{}, out chan<- Change) {
	defer close(out)
	nodes := len(c.b.nodes)
	g := &gathered{c: c, needed: majority(nodes), views: make([]**seen, nodes),
		failures: make([]error, nodes), heard: make([]bool, nodes)}
	defer g.release()
	for {
		var r report
		select {
		case r = <-reports:
		case <-g.grace():
			change := *g.pending
			g.release()
			if !g.send(ctx, out, change) {
				return
			}
			continue
		case <-ended:
			return
		case <-ctx.Done():
			return
		}
		change, news := g.heardFrom(r)
		switch {
		case !news:
			g.release() // back to what was sent, as the Rust observer
		case g.uncommitted(change):
			g.hold(change)
		default:
			g.release()
			if !g.send(ctx, out, change) {
				return
			}
		}
	}
}

// heardFrom records a node's report; the change it makes, if it is news.
func (g *gathered) heardFrom(r report) (Change, bool) {
	g.heard[r.node] = true
	g.views[r.node], g.failures[r.node] = nil, nil
	if r.err == nil {
		h := r.held
		g.views[r.node] = &h
	} else {
		g.failures[r.node] = r.err
	}
	change, decided := g.c.view(g.views, g.failures, g.needed, g.shown, countTrue(g.heard) == len(g.heard))
	return change, decided && (g.shown == nil || !sameChange(*g.shown, change))
}

// uncommitted: change is a leader other than the one sent whose epoch (the same id and token)
// is on fewer than needed nodes: its grant may still be being committed.
func (g *gathered) uncommitted(change Change) bool {
	if change.Err != nil || change.Leader == nil {
		return false
	}
	l := change.Leader
	if g.shown != nil && g.shown.Err == nil && g.shown.Leader != nil && g.shown.Leader.ID == l.ID {
		return false
	}
	on := 0
	for _, v := range g.views {
		if v != nil && *v != nil && (*v).token == l.Epoch {
			if id, _ := SplitOwner((*v).owner); id == l.ID {
				on++
			}
		}
	}
	return on < g.needed
}

// hold keeps change back, replacing any held one; the grace runs from the first (a newer view
// does not push it back).
func (g *gathered) hold(change Change) {
	g.pending = &change
	if g.timer == nil {
		g.timer = time.NewTimer(commitGrace)
	}
}

// release drops the held change, if any.
func (g *gathered) release() {
	g.pending = nil
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}

// grace fires when the held change's grace ends (nil, never, while none is held).
func (g *gathered) grace() <-chan time.Time {
	if g.timer == nil {
		return nil
	}
	return g.timer.C
}

// send sends change as the one shown; false once ctx is done.
func (g *gathered) send(ctx context.Context, out chan<- Change, change Change) bool {
	g.shown = &change
	select {
	case out <- change:
		return true
	case <-ctx.Done():
		return false
	}
}

// view is the change the nodes' views make (after previous); not decided until every node has
// answered once (or failed): the first nodes to answer may hold a grant whose commit is still
// on its way to the others, and the first change is to be the leader.
func (c *calls) view(views []**seen, failures []error, needed int, previous *Change, allHeard bool) (Change, bool) {
	if !allHeard {
		return Change{}, false
	}
	var before *Leader
	if previous != nil {
		before = previous.Leader
	}
	leader, known := leaderView(views, needed, before)
	if known {
		return Change{Leader: leader}, true
	}
	var listed []NodeFailure
	for node, err := range failures {
		if errors.Is(err, ErrWrongKind) {
			return Change{Err: err}, true // the name is a shared lock or a semaphore: say so
		}
		if err != nil {
			listed = append(listed, *asFailure(err, c.b.nodes[node].Name()))
		}
	}
	return Change{Err: &Error{Kind: ErrNoQuorum, Resource: c.resource, Needed: needed, Failures: listed}}, true
}

// asFailure is why a node could not say, as a NodeFailure naming it.
func asFailure(err error, node string) *NodeFailure {
	var f *NodeFailure
	if errors.As(err, &f) {
		return f
	}
	return &NodeFailure{Node: node, Reason: err.Error()}
}

// sameChange: the same leader (id, value, epoch), or both nobody, or both unknown.
func sameChange(a, b Change) bool {
	switch {
	case a.Err != nil || b.Err != nil:
		return a.Err != nil && b.Err != nil
	case a.Leader == nil || b.Leader == nil:
		return a.Leader == nil && b.Leader == nil
	}
	return *a.Leader == *b.Leader
}

func countTrue(flags []bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}
