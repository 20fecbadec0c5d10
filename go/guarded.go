package dlock

import (
	"context"
	"fmt"
	"strings"
)

// DataConn is a connection to the data's Redis (with the module): a redigo redis.Conn, or
// anything with its Do.
type DataConn interface {
	Do(commandName string, args ...interface{}) (reply interface{}, err error)
}

// Guarded runs command with args on conn only if this lock's token is still current at the key
// gate, raising the gate to it, in one step on that server (DLOCK.GUARD); it returns the
// command's reply. When a newer holder has written through the gate, nothing changes, the lock
// is lost (Context done, Err set) and the error is ErrStale (errors.Is(err, ErrLockLost) too);
// a lock already lost gets ErrLockLost and nothing is sent. The token is read as Token reads
// it: a commit the hold owes is paid first (one FENCE round, each call within the manager's
// per-node timeout), and one that fails is ErrLockLost with nothing sent to conn. Other errors
// are conn's.
func (l *Lock) Guarded(conn DataConn, gate string, command string, args ...interface{}) (interface{}, error) {
	if l.Err() != nil || l.isReleased() {
		return nil, &Error{Kind: ErrLockLost, Resource: l.Resource(), op: opExtend}
	}
	token, err := l.Token(context.Background())
	if err != nil {
		return nil, err
	}
	wrapped := append([]interface{}{gate, token, command}, args...)
	reply, err := conn.Do("DLOCK.GUARD", wrapped...)
	if err != nil && strings.HasPrefix(err.Error(), "STALE") {
		stale := &Error{Kind: ErrStale, Resource: l.Resource(), Message: gate, Token: token}
		l.lose(stale)
		return nil, stale
	}
	return reply, err
}

func staleMessage(e *Error) string {
	return fmt.Sprintf("dlock: lock %q was lost: gate %q has seen a newer token than %d; nothing was written",
		e.Resource, e.Message, e.Token)
}
