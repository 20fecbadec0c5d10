package dlock

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"
)

// Redlock's arithmetic, free of I/O (client/src/timing.rs, node/src/timing.ts): quorum sizes,
// clock-drift allowance, validity, owners and tickets.

// majority of nodes: N/2 + 1.
func majority(nodes int) int {
	return nodes/2 + 1
}

// semaphoreQuorum is the number of nodes a permit of a semaphore of limit k must be held on:
// the smallest q with q > N*k/(k+1), so k+1 holders can never each gather a quorum
// (docs/shared.md).
func semaphoreQuorum(nodes, limit int) int {
	k := limit
	if k < 1 {
		k = 1
	}
	return nodes*k/(k+1) + 1
}

// Drift is the clock-drift allowance: TTL*Factor + Constant.
type Drift struct {
	// Factor is the share of the TTL the nodes' clocks may disagree by (0.01: 1%).
	Factor float64
	// Constant is added to it.
	Constant time.Duration
}

// DefaultDrift is the drift every client assumes unless told otherwise.
var DefaultDrift = Drift{Factor: 0.01, Constant: 2 * time.Millisecond}

// Validity is how long a hold is still safe to use after an operation that started elapsed
// ago: ttl - elapsed - (ttl*factor + constant), or false when nothing is left.
func Validity(ttl, elapsed time.Duration, drift Drift) (time.Duration, bool) {
	if elapsed < 0 {
		elapsed = 0
	}
	factor := drift.Factor
	if factor < 0 {
		factor = 0
	}
	left := float64(ttl-elapsed) - (float64(ttl)*factor + float64(drift.Constant))
	// Under a nanosecond is float rounding, not time left.
	if left < 1 {
		return 0, false
	}
	return time.Duration(left), true
}

// newOwner is 128 random bits in hex: unique per acquisition, as the protocol requires.
func newOwner() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a clock-based value still differs per call.
		return strconv.FormatInt(time.Now().UnixNano(), 16) + strconv.FormatInt(int64(drawTicket()), 16)
	}
	return hex.EncodeToString(b[:])
}

// roundOwner: each round of an attempt asks under its own owner, so a late RELEASE of an old
// round cannot free the next.
func roundOwner(base string, round int) string {
	return base + ":" + strconv.Itoa(round)
}

var tickets struct {
	sync.Mutex
	last uint64
}

// drawTicket is the wall clock in microseconds, strictly increasing within this process:
// equal tickets cannot wound each other. Across processes a tie costs only time, never safety.
func drawTicket() uint64 {
	now := uint64(time.Now().UnixMicro())
	tickets.Lock()
	defer tickets.Unlock()
	if now <= tickets.last {
		now = tickets.last + 1
	}
	tickets.last = now
	return now
}
