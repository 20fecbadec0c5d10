package dlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A set across slots (docs/go/sets.md, "On Redis Cluster"; docs/multi.md, "Redis Cluster"): on a
// manager with a Redis Cluster node, a set whose keys span slots is taken group by group, in
// the one global order of groups (slot, then key), each group a set of its own through the set
// path (acquireWith). It is held as one *Lock whose across lists the groups: loss of any group
// loses the whole and gives back the rest; Token is refused (one token per group: Tokens).

// across is a set's slot groups, held one after another.
type across struct {
	groups []*Lock // in the order taken: slot order
	of     []int   // the group of each resource, in the caller's order
}

// acquireAcross takes set group by group within one deadline (the wait given, shared by every
// group; without one, one attempt per group). A group that fails gives back the groups held,
// awaited, and its error is the call's, unchanged.
func acquireAcross(ctx context.Context, b *backend, set *members, ttl time.Duration, a acquireConfig) (*Lock, error) {
	end := time.Now().Add(a.wait)
	x := &across{of: make([]int, len(set.keys))}
	group := map[string]int{}
	for i, keys := range groups(set.keys) {
		for _, k := range keys {
			group[k] = i
		}
		sub := set.subset(keys)
		asked := a
		if a.waiting {
			if asked.wait = time.Until(end); asked.wait < 0 {
				asked.wait = 0
			}
		}
		l, err := acquireWith(ctx, &calls{b: b, resource: sub.name(), kind: Exclusive, set: sub}, ttl, asked)
		if err != nil {
			x.giveBack()
			return nil, err
		}
		x.groups = append(x.groups, l)
	}
	owners := make([]string, len(x.groups))
	for i, g := range x.groups {
		owners[i] = g.Owner()
	}
	for i, k := range set.keys {
		x.of[i] = group[k]
	}
	l := &Lock{calls: &calls{b: b, resource: set.name(), kind: Exclusive, set: set}, ttl: ttl,
		owner: strings.Join(owners, ","), acquiredAt: time.Now(), stale: newSignal(), holds: 1,
		writes: make(chan struct{}, 1), across: x}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	for _, g := range x.groups {
		go x.watchLoss(l, g)
	}
	return l, nil
}

// subset is the members keys (of s), with their modes.
func (s *members) subset(keys []string) *members {
	sub := &members{keys: keys}
	if s.modes == "" {
		return sub
	}
	mode := make(map[string]byte, len(s.keys))
	for i, k := range s.keys {
		mode[k] = s.modes[i]
	}
	letters := make([]byte, len(keys))
	for i, k := range keys {
		letters[i] = mode[k]
	}
	if strings.ContainsRune(string(letters), 's') {
		sub.modes = string(letters)
	}
	return sub
}

// giveBack releases every group held, the last taken first, and waits for the releases.
func (x *across) giveBack() error {
	var first error
	for i := len(x.groups) - 1; i >= 0; i-- {
		if err := x.groups[i].Release(context.Background()); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// watchLoss: g lost (its Context done while not released) loses the set, and the other groups
// are given back.
func (x *across) watchLoss(l *Lock, g *Lock) {
	select {
	case <-g.Context().Done():
		if g.Err() != nil {
			x.lose(l)
		}
	case <-l.ctx.Done(): // released, or lost through another group
	}
}

// lose ends the set's lease (Context done, Err an ErrLockLost error) and gives back every group
// in the background (Close waits for it).
func (x *across) lose(l *Lock) error {
	lost := l.calls.lockLost()
	l.lose(lost)
	l.calls.b.spawn(func() { _ = x.giveBack() })
	return lost
}

// oneToken is Token's refusal: a set across slots has a token per group.
func (x *across) oneToken() error {
	return invalid(fmt.Sprintf("a set across %d slots has one token per slot group: use Tokens", len(x.groups)))
}

// Tokens are the fencing tokens, one per resource in the order given: each the token of the
// resource's lock (read as Token reads it: a commit owed is paid first). A lock or a set on one
// slot has one token, given for each resource; a set across slots on a Redis Cluster has one
// per slot group, each fencing its own group's resources only (tokens of different groups are
// not comparable). A commit that fails loses the set: the other groups are given back and the
// error is ErrLockLost.
func (l *Lock) Tokens(ctx context.Context) ([]uint64, error) {
	if l.across != nil {
		return l.across.tokens(ctx, l)
	}
	token, err := l.Token(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(l.Resources()))
	for i := range out {
		out[i] = token
	}
	return out, nil
}

func (x *across) tokens(ctx context.Context, l *Lock) ([]uint64, error) {
	each := make([]uint64, len(x.groups))
	for i, g := range x.groups {
		token, err := g.Token(ctx)
		if errors.Is(err, ErrLockLost) {
			return nil, x.lose(l)
		}
		if err != nil {
			return nil, err
		}
		each[i] = token
	}
	out := make([]uint64, len(x.of))
	for i, group := range x.of {
		out[i] = each[group]
	}
	return out, nil
}

// until is the set's validity end: its first group's to end.
func (x *across) until() time.Time {
	first := x.groups[0].Until()
	for _, g := range x.groups[1:] {
		if u := g.Until(); u.Before(first) {
			first = u
		}
	}
	return first
}

// extend extends every group to ttl. A group lost loses the set (the others given back,
// ErrLockLost); a group not confirmed (ErrNoQuorum) or a done ctx leaves the set as a lock is
// left: held until its earlier deadline, that error returned.
func (x *across) extend(ctx context.Context, l *Lock, ttl time.Duration) error {
	if l.Err() != nil || l.isReleased() {
		return &Error{Kind: ErrLockLost, Resource: l.Resource(), op: opExtend}
	}
	for _, g := range x.groups {
		err := g.Extend(ctx, ttl)
		if errors.Is(err, ErrLockLost) {
			x.lose(l)
			return &Error{Kind: ErrLockLost, Resource: l.Resource(), op: opExtend}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// watch keeps every group extended (Lock.Watch); stop stops them all and tells whether the set
// was lost.
func (x *across) watch(l *Lock) func() bool {
	stops := make([]func() bool, len(x.groups))
	for i, g := range x.groups {
		stops[i] = g.Watch()
	}
	return func() bool {
		for _, stop := range stops {
			stop()
		}
		return l.Err() != nil
	}
}

// release gives back every group, the last taken first (awaited); releasing again does nothing.
func (x *across) release(l *Lock) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released, l.holds = true, 0
	l.mu.Unlock()
	l.stale.raise()
	err := x.giveBack()
	l.cancel()
	return err
}
