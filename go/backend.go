package dlock

import (
	"context"
	"math/rand"
	"sync"
	"time"

	"dlock.dev/dlock/transport"
)

// What a manager and the locks it hands out share (client/src/backend.rs): the nodes, the
// options, one call to a node (with its replica acknowledgement), the work left running in the
// background, the retry pause and validity.
type backend struct {
	nodes    []transport.Node
	registry *transport.Registry // which node reaches which server: one never counts twice
	cfg      config
	ack      *transport.Ack
	queue    bool // waits queue on the nodes (else retry mode)
	shared   *shared
}

// shared is what every view of a backend has in common (a Mutex's own options make a view).
type shared struct {
	background sync.WaitGroup
	workers    workers
	mu         sync.Mutex
	closed     bool
	waits      localWaits // one server-side wait per resource
}

// workers run the requests to the nodes on goroutines kept between requests: a new goroutine's
// stack grows on its first request (the redigo call chain), which cost a tenth of the client's
// CPU (acquire+release on 5 local masters, 2 loaded cores: p50 370-460 us against 400-520 us,
// and 7% less CPU time, than with a goroutine per request). A request never waits for a worker (a queued wait may block one for long): with none
// idle, a new one starts. An idle worker ends after idleWorker, or at once when the manager is
// closed (stop): none outlives Close but for the work it is still doing.
type workers struct {
	idle chan func()
	stop chan struct{}
}

const idleWorker = 10 * time.Second

func (w *workers) run(work func()) {
	select {
	case w.idle <- work:
	default:
		go w.loop(work)
	}
}

func (w *workers) loop(work func()) {
	timer := time.NewTimer(idleWorker)
	defer timer.Stop()
	for {
		work()
		if !timer.Stop() {
			<-timer.C
		}
		timer.Reset(idleWorker)
		work = nil // what the last request held is not kept while idle
		select {
		case work = <-w.idle:
		case <-timer.C:
			return
		case <-w.stop:
			return
		}
	}
}

func newBackend(nodes []transport.Node, registry *transport.Registry, cfg config) *backend {
	w := workers{idle: make(chan func()), stop: make(chan struct{})}
	return (&backend{nodes: nodes, registry: registry, shared: &shared{workers: w}}).with(cfg)
}

// with is a view of the same nodes under other options.
func (b *backend) with(cfg config) *backend {
	view := &backend{nodes: b.nodes, registry: b.registry, cfg: cfg, shared: b.shared}
	view.queue = cfg.waitMode == Queue && (cfg.fencing || len(b.nodes) == 1)
	switch {
	case cfg.ack.replicas > 0:
		view.ack = &transport.Ack{Replicas: cfg.ack.replicas, Timeout: cfg.ackTimeout, Everywhere: true}
	case cfg.ack == AckAuto:
		view.ack = &transport.Ack{Replicas: 1, Timeout: cfg.ackTimeout}
	}
	return view
}

func (b *backend) needed(k Kind) int { return k.Quorum(len(b.nodes)) }

func (b *backend) everywhere() []int { return upTo(len(b.nodes)) }

// spawn runs work in the background (Close waits for it, within a bound).
func (b *backend) spawn(work func()) {
	b.shared.background.Add(1)
	b.shared.workers.run(func() {
		defer b.shared.background.Done()
		work()
	})
}

func (b *backend) isClosed() bool {
	b.shared.mu.Lock()
	defer b.shared.mu.Unlock()
	return b.shared.closed
}

// retryPause is the retry delay plus up to the jitter, so contenders do not retry in lockstep.
func (b *backend) retryPause() time.Duration {
	pause := b.cfg.retryDelay
	if b.cfg.retryJitter > 0 {
		pause += time.Duration(rand.Int63n(int64(b.cfg.retryJitter)))
	}
	return pause
}

// validity left of a hold of ttl whose TTL was last set by a request sent at since.
func (b *backend) validity(ttl time.Duration, since time.Time) (time.Duration, bool) {
	return Validity(ttl, time.Since(since), b.cfg.drift)
}

// call sends one command to node, with its replica acknowledgement when it writes (acked);
// blocking is how long the server may hold the reply (a queued wait). Its reply, or why none.
func (b *backend) call(node int, cmd []string, acked bool, blocking time.Duration) (interface{}, *NodeFailure) {
	n := b.nodes[node]
	if why := b.registry.Refused(node); why != "" {
		return nil, &NodeFailure{Node: n.Name(), Reason: why} // never asked again
	}
	defer b.registry.Met(node)
	cmds := [][]string{cmd}
	whole := b.cfg.timeout + blocking
	ack := acked && b.ack.On(n)
	if ack {
		cmds = append(cmds, b.ack.Wait())
		whole += b.ack.Extra()
	}
	replies, f := n.Call(context.Background(), b.cfg.timeout, whole, cmds)
	if f != nil {
		return nil, f
	}
	if e, ok := replies[0].(transport.Error); ok {
		return nil, &NodeFailure{Node: n.Name(), Reason: transport.ExplainReply(e)}
	}
	if ack {
		if f := b.ack.Check(n.Name(), replies); f != nil {
			return nil, f
		}
	}
	return replies[0], nil
}

// refusal is why every acquisition is refused: two nodes reach one server ("" while none do).
func (b *backend) refusal() string { return b.registry.Refusal() }

// meetAll waits, at most within, until every node was met once (transport/identity.go): only
// a manager's first lock waits.
func (b *backend) meetAll(within time.Duration) {
	for until := time.Now().Add(within); !b.registry.AllMet() && time.Now().Before(until); {
		time.Sleep(time.Millisecond)
	}
}

// tokenOf reads a grant's token (integers only: tokens pass 2^53).
func tokenOf(r interface{}) (uint64, bool) {
	if n, ok := r.(int64); ok && n > 0 {
		return uint64(n), true
	}
	return 0, false
}

func isOne(r interface{}) bool {
	n, ok := r.(int64)
	return ok && n == 1
}
