package dlock

import "errors"

// The lease's writes, one at a time (client/src/lease.rs, writing). Extend, Reenter, the
// watchdog's extension and the commit each set the TTL on the nodes, and the lock keeps the
// validity of the one it applied last; the nodes keep the TTL of the one that arrived last. Run
// concurrently, the two can differ (a commit's FENCE ... PX 10s landing before an Extend of
// 0.5s whose reply is applied first: the client believing 10s while the nodes hold 0.5s). So
// each takes the lease's writes lock before its requests go out and gives it back once its
// outcome is applied and every node it asked answered (or timed out): a node's connections
// come from a pool, so a request still out could otherwise be overtaken by the next one. The
// writes then reach every node in the order the lock applies them. The last release takes it
// too, so no write follows a RELEASE.

// writing takes the writes lock, or gives up when stop is closed first (its error: any
// non-nil; a nil stop waits as long as it takes).
func (l *Lock) writing(stop <-chan struct{}) error {
	select {
	case l.writes <- struct{}{}:
		return nil
	case <-stop:
		return errStopped
	}
}

// written gives the writes lock back.
func (l *Lock) written() { <-l.writes }

// errStopped: the writes lock was not taken, the caller having stopped waiting.
var errStopped = errors.New("dlock: stopped waiting for the lease's writes")
