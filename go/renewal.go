package dlock

import "time"

// When a held lock's watchdog extends it, and when it declares the lock lost
// (client/src/renewal.rs): the one lease-loss contract every client keeps (docs/election.md,
// conformance/renewals.json).
//
// A watched lock is lost at its renew deadline, renewMargin before its validity ends, unless an
// extension confirmed by a quorum came first: never after the lease may already have ended on
// the nodes, so the holder has the margin to stop before anyone else can be granted. An
// extension the nodes refused (a quorum is out of reach: they say it is not held) is a loss at
// once; one that could not be confirmed (nodes unreachable, too slow) is tried again, at
// shorter and shorter pauses, until the renew deadline. Without a watchdog there is no renew
// deadline: the lock ends with its validity (endIn, watching).

// renewMargin is how long before its validity ends a lock without a confirmed extension is
// declared lost: a tenth of the TTL, at least 1 ms (whole milliseconds, as every client counts
// it).
func renewMargin(ttl time.Duration) time.Duration {
	margin := ttl.Milliseconds() / 10
	if margin < 1 {
		margin = 1
	}
	return time.Duration(margin) * time.Millisecond
}

// extension is how the last extension went (the grant itself counts as extended).
type extension int

const (
	extended extension = iota
	// refused: enough nodes said "not held" that no quorum can extend it any more.
	refused
	// unconfirmed: too few nodes answered, or too late to count.
	unconfirmed
)

// renewal is the watchdog's next step, with left of validity, its interval, after last: the
// pause before the next extension, or lost.
func renewal(ttl, interval, left time.Duration, last extension) (pause time.Duration, lost bool) {
	margin, leftMs := renewMargin(ttl).Milliseconds(), left.Milliseconds()
	if last == refused || leftMs <= margin {
		return 0, true
	}
	wait := interval.Milliseconds()
	if last == unconfirmed {
		wait /= 2
	}
	// Halfway to the renew deadline at the latest: the extension has time to be confirmed.
	if half := (leftMs - margin) / 2; half < wait {
		wait = half
	}
	if wait < 1 {
		wait = 1
	}
	return time.Duration(wait) * time.Millisecond, false
}

// outcome is an extension that was not confirmed: refused when so many nodes said "not held"
// that the kind's quorum is out of reach, else unconfirmed (tried again).
func (c *calls) outcome(t tally) extension {
	nodes := len(c.b.nodes)
	if t.refused > nodes-c.b.needed(c.kind) {
		return refused
	}
	return unconfirmed
}

// endIn is the time to Context's end for a hold of ttl valid until until: the renew deadline
// while watched, else validity's end (without a watchdog there is no renew deadline).
func endIn(until time.Time, ttl time.Duration, watched bool) time.Duration {
	if !watched {
		return time.Until(until)
	}
	return time.Until(until) - renewMargin(ttl)
}

// watching: a watchdog starts keeping the lock (Context ends at the renew deadline), or stops.
func (l *Lock) watching(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil && !l.released {
		l.watched = on
		l.renewBy.Reset(endIn(l.validUntil, l.ttlSet, on))
	}
}
