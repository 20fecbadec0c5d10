package dlock

// conformance/sets.json: a set's validation (before any I/O), the exact command each operation
// sends, and the Cluster grouping; a Cluster node refusing a set across slots.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock/transport"
)

// neverAsked is a pool that counts the connections asked of it (none should be).
type neverAsked struct{ gets *int64 }

func (p neverAsked) Get(context.Context) (transport.Conn, error) {
	atomic.AddInt64(p.gets, 1)
	return nil, errors.New("asked")
}

func strs(v interface{}) []string {
	out := []string{}
	for _, s := range v.([]interface{}) {
		out = append(out, s.(string))
	}
	return out
}

// modesOf maps the table's letters to Kinds: x Exclusive, s SharedKind, any other letter a
// kind a set cannot hold.
func modesOf(v interface{}) []AcquireOption {
	if v == nil {
		return nil
	}
	kinds := []Kind{}
	for _, letter := range strs(v) {
		switch letter {
		case "x":
			kinds = append(kinds, Exclusive)
		case "s":
			kinds = append(kinds, SharedKind)
		default:
			kinds = append(kinds, SemaphoreKind(1))
		}
	}
	return []AcquireOption{Modes(kinds...)}
}

func TestConformanceSets(t *testing.T) {
	var gets int64
	m := New(neverAsked{&gets}, neverAsked{&gets}, neverAsked{&gets})
	defer m.Close()
	ctx := context.Background()
	for _, c := range table(t, "sets.json") {
		keys, owner := strs(c["resources"]), c["owner"].(string)
		ttl := time.Duration(num(c["ttl_ms"])) * time.Millisecond
		set, a, err := m.checkSet(keys, ttl, modesOf(c["modes"]))
		if c["accepted"] == false {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s: %v, want ErrInvalidArgument", label(c), err)
			}
			if _, err := m.AcquireAll(ctx, keys, ttl, modesOf(c["modes"])...); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s: AcquireAll %v, want ErrInvalidArgument", label(c), err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused: %v", label(c), err)
			continue
		}
		calls := &calls{b: m.b, resource: set.name(), kind: a.kind, set: set}
		commands := c["commands"].(map[string]interface{})
		got := map[string][]string{
			"acquire":      calls.acquireCmd(owner, ttl, nil),
			"acquire_wait": calls.acquireCmd(owner, ttl, &queued{timeout: 5 * time.Second, ticket: 7}),
			"release":      calls.releaseCmd(owner),
			"extend":       calls.extendCmd(owner, ttl),
			"fence":        calls.fenceCmd(owner, 42, ttl),
		}
		for op, want := range commands {
			same(t, label(c)+" "+op, got[op], strs(want))
		}
		if len(commands) != len(got) {
			t.Errorf("%s: the table has %d commands, the test %d", label(c), len(commands), len(got))
		}
		var groupsWanted [][]string
		for _, g := range c["groups"].([]interface{}) {
			groupsWanted = append(groupsWanted, strs(g))
		}
		same(t, label(c)+" groups", groups(keys), groupsWanted)
	}
	if gets != 0 {
		t.Errorf("%d connections asked for", gets)
	}
}

func TestASetAcrossSlotsIsTakenGroupByGroupOnAClusterNode(t *testing.T) {
	m, err := Connect([]string{"redis+cluster://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	// Across slots: the first group asked fails (no cluster at port 1), its error unchanged.
	_, err = m.AcquireAll(ctx, []string{"a", "b"}, time.Second)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNoQuorum) || e.Resource != groups([]string{"a", "b"})[0][0] {
		t.Errorf("across slots: %v, want the first group's ErrNoQuorum", err)
	}
	// One slot: one set, sent as it is.
	_, err = m.AcquireAll(ctx, []string{"{acct}:1", "{acct}:2"}, time.Second)
	if !errors.As(err, &e) || !errors.Is(err, ErrNoQuorum) || e.Resource != "{acct}:1,{acct}:2" {
		t.Errorf("one slot: %v, want ErrNoQuorum", err)
	}
}

func TestTheGroupsOfASetKeepTheirModes(t *testing.T) {
	set, err := newMembers([]string{"b", "a", "c"}, []Kind{Exclusive, SharedKind, Exclusive})
	if err != nil {
		t.Fatal(err)
	}
	if sub := set.subset([]string{"a", "b"}); sub.modes != "sx" {
		t.Errorf("a, b: %q", sub.modes)
	}
	if sub := set.subset([]string{"c", "b"}); sub.modes != "" {
		t.Errorf("c, b (both exclusive): %q", sub.modes)
	}
}
