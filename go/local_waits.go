package dlock

import (
	"context"
	"sync"
	"time"
)

// localWaits: many local waiters, few server waits (docs/waiting.md). A queued Acquire waits on
// the nodes on a connection of its own, so a thousand goroutines of one process waiting for one
// resource would hold a thousand blocked connections on every node. A manager keeps at most one
// server-side wait per resource; its other callers queue here, first come first served, and each
// takes its turn on the nodes when the one before it is granted or gives up (the turn covers the
// wait, never the hold).
type localWaits struct {
	mu     sync.Mutex
	queues map[string][]chan struct{} // per resource, in arrival order; the head has the turn
}

// turn waits up to wait (or until ctx is done) for resource's turn, saying whether it came;
// leave, which must be called either way, hands the turn on.
func (w *localWaits) turn(ctx context.Context, resource string, wait time.Duration) (leave func(), came bool) {
	mine := make(chan struct{})
	w.mu.Lock()
	if w.queues == nil {
		w.queues = map[string][]chan struct{}{}
	}
	w.queues[resource] = append(w.queues[resource], mine)
	if len(w.queues[resource]) == 1 {
		close(mine)
	}
	w.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-mine:
		came = true
	case <-timer.C:
	case <-ctx.Done():
	}
	return func() { w.leave(resource, mine) }, came
}

// leave takes mine out of resource's queue, handing the turn to the next caller if mine had it.
func (w *localWaits) leave(resource string, mine chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	queue := w.queues[resource]
	for i, c := range queue {
		if c != mine {
			continue
		}
		queue = append(queue[:i:i], queue[i+1:]...)
		if i == 0 && len(queue) > 0 {
			close(queue[0])
		}
		break
	}
	if len(queue) == 0 {
		delete(w.queues, resource)
	} else {
		w.queues[resource] = queue
	}
}
