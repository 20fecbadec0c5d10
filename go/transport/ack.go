package transport

import (
	"fmt"
	"strconv"
	"time"
)

// Replica acknowledgement (client/src/transport/ack.rs): WAIT n timeout in the same pipeline
// after each grant, extension and commit; the write counts only when the node reports at least
// n replicas. A RELEASE is not acknowledged (losing one only leaves a lock to expire).

// Tick is how late a server may answer a blocked client's timeout: it checks them once per hz
// tick (100 ms at the default hz 10).
const Tick = 100 * time.Millisecond

// Ack is how many replicas a write waits for, and how long.
type Ack struct {
	Replicas int
	Timeout  time.Duration
	// Everywhere: on every node; else on failover-managed nodes only (replica_ack "auto").
	Everywhere bool
}

// On tells whether writes to node wait for replicas.
func (a *Ack) On(node Node) bool {
	return a != nil && a.Replicas > 0 && (a.Everywhere || node.FailoverManaged())
}

// Extra is the time a call with an acknowledgement may take beyond its own: the WAIT's
// timeout and the server's tick (it answers a blocked WAIT at a tick too).
func (a *Ack) Extra() time.Duration {
	return a.Timeout + Tick
}

// Wait is the WAIT sent after a write.
func (a *Ack) Wait() []string {
	return []string{"WAIT", strconv.Itoa(a.Replicas), strconv.FormatInt(a.Timeout.Milliseconds(), 10)}
}

// Check reads a write's replies (the write's, then the WAIT's): a write that wrote (a token,
// or 1) and was acknowledged by too few replicas is node's failure.
func (a *Ack) Check(node string, replies []interface{}) *Failure {
	if len(replies) < 2 {
		return nil
	}
	if n, ok := replies[0].(int64); !ok || n < 1 {
		return nil // nothing written: nothing to acknowledge
	}
	acked, _ := replies[1].(int64)
	if acked >= int64(a.Replicas) {
		return nil
	}
	return &Failure{Node: node, Reason: fmt.Sprintf("written but only %d of %d replicas acknowledged within %v", acked, a.Replicas, a.Timeout)}
}
