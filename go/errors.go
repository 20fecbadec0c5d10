package dlock

import (
	"errors"
	"fmt"
	"strings"

	"dlock.dev/dlock/transport"
)

// What can go wrong, in terms a caller can act on (client/src/errors.rs). Every error the
// package returns is an *Error; errors.Is tells its kind by the sentinels below, and the
// redsync names (ErrFailed, ErrExtendFailed, ErrLockAlreadyExpired) match where they mean the
// same.

// NodeFailure is why one node did not count towards a quorum: its name (the URL, password
// hidden) and the reason.
type NodeFailure = transport.Failure

var (
	// ErrContended: held by another owner until the wait ran out.
	ErrContended = errors.New("held by another owner")
	// ErrNoQuorum: too few nodes answered for a quorum (Failures names them).
	ErrNoQuorum = errors.New("no quorum")
	// ErrValidityExpired: a quorum granted, but no validity was left (slow nodes, tiny TTL).
	ErrValidityExpired = errors.New("validity expired while acquiring")
	// ErrLockLost: the lock is no longer held on a quorum (an extension failed, validity ran
	// out, or max hold passed).
	ErrLockLost = errors.New("lock lost")
	// ErrStale: a guarded write (Lock.Guarded) was refused, a newer holder having written
	// through the gate; nothing changed and the lock is lost (errors.Is ErrLockLost too).
	ErrStale = errors.New("stale token")
	// ErrInvalidArgument: bad input, refused before any node was asked; or an argument a node
	// refused all the same (ERR ... must be ...), which ends the call at once.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrWrongKind: a node holds the resource as another kind (its WRONGKIND message); never
	// retried.
	ErrWrongKind = errors.New("held as another kind")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("the lock manager is closed")

	// ErrFailed is redsync's name: any acquisition that did not take the lock.
	ErrFailed = errors.New("failed to acquire lock")
	// ErrExtendFailed is redsync's name: an extension that did not extend.
	ErrExtendFailed = errors.New("failed to extend lock")
	// ErrLockAlreadyExpired is redsync's name: an unlock that found the lock not held.
	ErrLockAlreadyExpired = errors.New("failed to unlock, lock was already expired")
)

// op is what was being done when an error happened (for the redsync names).
type op int

const (
	opAcquire op = iota + 1
	opExtend
	opRelease
)

// Error is every error of the package: its Kind (one of the sentinels above) and details.
type Error struct {
	Kind     error
	Resource string
	// Attempts made, for ErrContended (in queue mode usually 1).
	Attempts int
	// Needed nodes and the Failures of the others, for ErrNoQuorum.
	Needed   int
	Failures []NodeFailure
	// Message: the node's WRONGKIND message, what was wrong with an argument, or the gate of
	// an ErrStale.
	Message string
	// Token: the lock's token, for ErrStale.
	Token uint64
	op    op
}

// Is matches the kind, and the redsync names where they mean the same.
func (e *Error) Is(target error) bool {
	switch target {
	case e.Kind:
		return true
	case ErrFailed:
		return e.op == opAcquire && e.Kind != ErrInvalidArgument
	case ErrExtendFailed:
		return e.op == opExtend
	case ErrLockAlreadyExpired:
		return e.op == opRelease && e.Kind == ErrLockLost
	case ErrLockLost:
		return e.Kind == ErrStale
	}
	return false
}

func (e *Error) Error() string {
	switch e.Kind {
	case ErrContended:
		return fmt.Sprintf("dlock: lock %q is held by another owner (%s)", e.Resource, count(e.Attempts, "attempt"))
	case ErrNoQuorum:
		return noQuorumMessage(e)
	case ErrValidityExpired:
		return fmt.Sprintf("dlock: lock %q was granted, but its validity ran out while acquiring: give a longer TTL", e.Resource)
	case ErrLockLost:
		return fmt.Sprintf("dlock: lock %q was lost (no longer held on a majority): stop using its token", e.Resource)
	case ErrInvalidArgument:
		return "dlock: invalid argument: " + e.Message
	case ErrStale:
		return staleMessage(e)
	case ErrWrongKind:
		return fmt.Sprintf("dlock: lock %q is held as another kind on %s", e.Resource, e.Message)
	default:
		return "dlock: " + e.Kind.Error()
	}
}

// noQuorumMessage: the nodes needed, then each failed node and why.
func noQuorumMessage(e *Error) string {
	said := fmt.Sprintf("dlock: no quorum for %q: %s needed, %d failed", e.Resource, count(e.Needed, "node"), len(e.Failures))
	list := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		list[i] = f.Node + ": " + f.Reason
	}
	if len(list) > 0 {
		said += ": " + strings.Join(list, "; ")
	}
	return said
}

// count is n with its noun, singular for one: "1 attempt", "3 nodes".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func invalid(why string) error {
	return &Error{Kind: ErrInvalidArgument, Message: why}
}

// isWrongKind: a node's reply that the resource is held as another kind.
func isWrongKind(f NodeFailure) bool {
	return strings.Contains(f.Reason, "WRONGKIND")
}

// isRefusedArgument: a node's error reply refusing an argument of the request, "ERR <argument>
// must be <what it takes>" as every argument check of the module words it (src/wire/errors.rs;
// a TTL over the node's dlock.max-ttl-ms, say). Asking again cannot change it.
func isRefusedArgument(f NodeFailure) bool {
	return strings.HasPrefix(f.Reason, "ERR ") && strings.Contains(f.Reason, " must be ")
}
