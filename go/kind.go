package dlock

import "fmt"

// MaxLimit is the largest semaphore limit the module accepts.
const MaxLimit = 10000

// Kind is how a resource is held: exclusively (the default), shared (a reader's hold), or as
// one permit of a semaphore of Limit permits (client/src/kind.rs).
type Kind struct {
	shared bool
	limit  int
}

// Exclusive is the plain lock: one holder at a time.
var Exclusive = Kind{}

// SharedKind is a reader's hold: any number at once, none beside an exclusive holder.
var SharedKind = Kind{shared: true}

// SemaphoreKind is one permit of a semaphore of limit permits (1 to MaxLimit).
func SemaphoreKind(limit int) Kind {
	return Kind{limit: limit}
}

// IsShared tells a reader's hold.
func (k Kind) IsShared() bool { return k.shared }

// Limit is a semaphore's limit, 0 for the other kinds.
func (k Kind) Limit() int { return k.limit }

func (k Kind) String() string {
	switch {
	case k.shared:
		return "shared"
	case k.limit > 0:
		return fmt.Sprintf("semaphore(%d)", k.limit)
	default:
		return "exclusive"
	}
}

// Quorum is the number of the nodes nodes that must grant, commit and extend a hold of this
// kind: a majority, or a semaphore's larger quorum (docs/shared.md).
func (k Kind) Quorum(nodes int) int {
	if k.limit > 0 {
		return semaphoreQuorum(nodes, k.limit)
	}
	return majority(nodes)
}

// args is the ACQUIRE option naming the kind, last on every ACQUIRE of an acquisition.
func (k Kind) args() []string {
	switch {
	case k.shared:
		return []string{"SHARED"}
	case k.limit > 0:
		return []string{"LIMIT", fmt.Sprint(k.limit)}
	default:
		return nil
	}
}
