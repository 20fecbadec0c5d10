package dlock

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mna/redisc"
)

// Sets (docs/go/sets.md; docs/commands.md): several resources taken all
// or nothing under one token. Each node answers a set as it answers one lock (DLOCK.ACQUIREALL:
// one token or nil), so the engine is the single lock's (quorum, validity, the commit, queueing,
// renewal, release, the lease-loss contract): only the commands differ (calls.set).

// MaxSet is the most resources a set takes (the module's limit).
const MaxSet = 16

// members are a set's keys, in the caller's order, and their modes: one letter per key (x
// exclusive, s shared), "" when every key is exclusive.
type members struct {
	keys  []string
	modes string
}

// Modes says how AcquireAll holds each resource, one Kind per resource in the same order:
// Exclusive or SharedKind (a set holds no semaphore permits). Without it every resource is
// exclusive. Whatever the modes, a set needs the exclusive lock's quorum (a majority).
func Modes(kinds ...Kind) AcquireOption {
	return func(a *acquireConfig) {
		a.modes = append([]Kind{}, kinds...)
	}
}

// newMembers checks a set: 1 to MaxSet resources, none empty or given twice, and modes (nil:
// none given) one Exclusive or SharedKind per resource.
func newMembers(keys []string, modes []Kind) (*members, error) {
	if len(keys) == 0 {
		return nil, invalid("a set needs at least one resource")
	}
	if len(keys) > MaxSet {
		return nil, invalid(fmt.Sprintf("a set takes at most %d resources, got %d", MaxSet, len(keys)))
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k == "" {
			return nil, invalid("the resource name must not be empty")
		}
		if seen[k] {
			return nil, invalid(fmt.Sprintf("resource %q is given twice in the set", k))
		}
		seen[k] = true
	}
	s := &members{keys: append([]string{}, keys...)}
	if modes == nil {
		return s, nil
	}
	if len(modes) != len(keys) {
		return nil, invalid(fmt.Sprintf("Modes needs one mode per resource: %d resources, %d modes", len(keys), len(modes)))
	}
	letters := make([]byte, len(modes))
	for i, k := range modes {
		switch k {
		case Exclusive:
			letters[i] = 'x'
		case SharedKind:
			letters[i] = 's'
		default:
			return nil, invalid(fmt.Sprintf("a set's resource is Exclusive or SharedKind, got %v for %q", k, keys[i]))
		}
	}
	if strings.ContainsRune(string(letters), 's') {
		s.modes = string(letters)
	}
	return s, nil
}

// name is how errors and Lock.Resource name the set: its keys, comma-separated.
func (s *members) name() string { return strings.Join(s.keys, ",") }

// groups is how a Redis Cluster takes keys across slots (sets_cluster.go): the keys of one slot
// together, the groups in slot order, the keys of a group sorted by bytes (one global order, so
// holding one group while waiting for the next cannot deadlock).
func groups(keys []string) [][]string {
	sorted := append([]string{}, keys...)
	sort.SliceStable(sorted, func(i, j int) bool {
		si, sj := redisc.Slot(sorted[i]), redisc.Slot(sorted[j])
		if si != sj {
			return si < sj
		}
		return sorted[i] < sorted[j]
	})
	var out [][]string
	for i, k := range sorted {
		if i > 0 && redisc.Slot(k) == redisc.Slot(sorted[i-1]) {
			out[len(out)-1] = append(out[len(out)-1], k)
			continue
		}
		out = append(out, []string{k})
	}
	return out
}

// Resources are what the lock holds: its resource, or a set's resources in the order given.
func (l *Lock) Resources() []string {
	if l.calls.set != nil {
		return append([]string{}, l.calls.set.keys...)
	}
	return []string{l.calls.resource}
}
