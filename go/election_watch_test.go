package dlock_test

// Observe against real redis-server processes: the leader first, then every change exactly
// once and in order (resign, a takeover, a proclamation, a lease that ran out), and an error
// change when too few nodes answer. Skipped while the module lacks DLOCK.OBSERVE.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"github.com/gomodule/redigo/redis"
)

// needObserve skips a test whose module has no DLOCK.OBSERVE yet.
func needObserve(t *testing.T, s *servers.Server) {
	t.Helper()
	info, err := s.Do("COMMAND", "INFO", "dlock.observe")
	if err != nil {
		t.Fatal(err)
	}
	if list, ok := info.([]interface{}); !ok || len(list) == 0 || list[0] == nil {
		t.Skip("the module has no DLOCK.OBSERVE yet")
	}
}

// nextChange is the observer's next change, within d.
func nextChange(t *testing.T, changes <-chan dlock.Change, d time.Duration) dlock.Change {
	t.Helper()
	select {
	case c, ok := <-changes:
		if !ok {
			t.Fatal("the observer closed its channel")
		}
		return c
	case <-time.After(d):
		t.Fatal("no change in time")
	}
	return dlock.Change{}
}

// expectLeader: change c is l (nil: nobody leads).
func expectLeader(t *testing.T, what string, c dlock.Change, l *dlock.Leader) {
	t.Helper()
	switch {
	case c.Err != nil:
		t.Fatalf("%s: %v", what, c.Err)
	case l == nil && c.Leader != nil, l != nil && (c.Leader == nil || *c.Leader != *l):
		t.Fatalf("%s: %+v, want %+v", what, c.Leader, l)
	}
}

func TestObserveFollowsEveryChangeInOrder(t *testing.T) {
	masters(t, func(t *testing.T, nodes []*servers.Server) {
		needObserve(t, nodes[0])
		ctx := deadline(t, 30*time.Second)
		a := connect(t, servers.URLs(nodes))
		// b's leader stops extending after max hold, as a frozen process would: its lease ends.
		b := connect(t, servers.URLs(nodes), dlock.WithMaxHold(2*time.Second))
		watching, stop := context.WithCancel(ctx)
		defer stop()
		first, err := a.Campaign(ctx, "obs", "a", lease)
		if err != nil {
			t.Fatal(err)
		}
		changes, err := a.Observe(watching, "obs")
		if err != nil {
			t.Fatal(err)
		}
		expectLeader(t, "first", nextChange(t, changes, 5*time.Second), &dlock.Leader{ID: first.ID(), Value: "a", Epoch: first.Epoch()})
		next := campaigning(t, ctx, b, "obs", "b")
		time.Sleep(300 * time.Millisecond)
		if err := first.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		second := <-next
		if second == nil {
			t.FailNow()
		}
		want := &dlock.Leader{ID: second.ID(), Value: "b", Epoch: second.Epoch()}
		// A handoff may pass through nobody (on several masters, while the grant is committed).
		c := nextChange(t, changes, 5*time.Second)
		if c.Err == nil && c.Leader == nil {
			c = nextChange(t, changes, 5*time.Second)
		}
		expectLeader(t, "after resign", c, want)
		if err := second.Proclaim(ctx, "b2"); err != nil {
			t.Fatal(err)
		}
		want = &dlock.Leader{ID: second.ID(), Value: "b2", Epoch: second.Epoch()}
		expectLeader(t, "after proclaim", nextChange(t, changes, 5*time.Second), want)
		expectLeader(t, "after the lease ran out", nextChange(t, changes, 6*time.Second), nil)
		quietThenClosed(t, changes, stop)
	})
}

// quietThenClosed: no change comes while nothing changes, and the channel is closed once the
// observer's context ends (stop).
func quietThenClosed(t *testing.T, changes <-chan dlock.Change, stop func()) {
	t.Helper()
	select {
	case c := <-changes:
		t.Fatalf("a change nothing made: %+v %v", c.Leader, c.Err)
	case <-time.After(500 * time.Millisecond):
	}
	stop()
	select {
	case _, open := <-changes:
		if open {
			t.Fatal("a change after the observer's context ended")
		}
	case <-time.After(time.Second):
		t.Fatal("the channel stayed open after the context ended")
	}
}

// A leader that stops extending (here a raw grant nobody extends) is seen gone at its lease's
// end: the node answers the blocked OBSERVE then, nobody polls.
func TestAnExpiredLeaderIsSeenGone(t *testing.T) {
	nodes := servers.Start(t, 1, servers.Flavour{})
	needObserve(t, nodes[0])
	m := connect(t, servers.URLs(nodes))
	epoch, err := redis.Uint64(nodes[0].Do("DLOCK.ACQUIRE", "exp", "c0ffee:0 host-a", 400))
	if err != nil {
		t.Fatal(err)
	}
	changes, err := m.Observe(deadline(t, 10*time.Second), "exp")
	if err != nil {
		t.Fatal(err)
	}
	expectLeader(t, "first", nextChange(t, changes, 5*time.Second), &dlock.Leader{ID: "c0ffee:0", Value: "host-a", Epoch: epoch})
	started := time.Now()
	expectLeader(t, "at the lease's end", nextChange(t, changes, 5*time.Second), nil)
	if took := time.Since(started); took > 700*time.Millisecond {
		t.Errorf("seen gone after %v, want at the lease's end (400 ms)", took)
	}
}

func TestObservingASharedLockIsAWrongKind(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	needObserve(t, nodes[0])
	ctx := deadline(t, 10*time.Second)
	m := connect(t, servers.URLs(nodes))
	if _, err := m.Acquire(ctx, "readers", 10*time.Second, dlock.Shared()); err != nil {
		t.Fatal(err)
	}
	changes, err := m.Observe(ctx, "readers")
	if err != nil {
		t.Fatal(err)
	}
	if c := nextChange(t, changes, 5*time.Second); !errors.Is(c.Err, dlock.ErrWrongKind) {
		t.Fatalf("observing a shared lock: %+v %v, want ErrWrongKind", c.Leader, c.Err)
	}
}

func TestObserveSaysWhenTooFewNodesAnswer(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	needObserve(t, nodes[0])
	ctx := deadline(t, 20*time.Second)
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(200*time.Millisecond))
	changes, err := m.Observe(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	expectLeader(t, "first", nextChange(t, changes, 5*time.Second), nil)
	nodes[1].Kill()
	nodes[2].Kill()
	c := nextChange(t, changes, 5*time.Second)
	if !errors.Is(c.Err, dlock.ErrNoQuorum) {
		t.Fatalf("with 1 of 3 nodes up: %+v %v, want ErrNoQuorum", c.Leader, c.Err)
	}
	nodes[1].Spawn()
	if !nodes[1].Ready(10 * time.Second) {
		t.Fatal("the node did not come back")
	}
	expectLeader(t, "a quorum back", nextChange(t, changes, 5*time.Second), nil)
	// Closing the manager ends the observer: each node's watcher as its pending OBSERVE is
	// answered (here by a grant), the down node's at once.
	_ = m.Close()
	for _, s := range nodes[:2] {
		if _, err := s.Do("DLOCK.ACQUIRE", "gone", "c0ffee:0", 10000); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case c, open := <-changes:
		if open {
			t.Fatalf("a change after Close: %+v %v", c.Leader, c.Err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the channel stayed open after Close")
	}
}

func TestTheElectionExampleRunsAndExits(t *testing.T) {
	program := buildExample(t, "election")
	nodes := servers.Start(t, 1, servers.Flavour{})
	needObserve(t, nodes[0])
	ctx := deadline(t, 30*time.Second)
	cmd := exec.CommandContext(ctx, program)
	cmd.Env = append(os.Environ(), fmt.Sprintf("DLOCK_NODES=%s", nodes[0].URL()))
	out, err := cmd.CombinedOutput()
	want := regexp.MustCompile(`^leading with epoch [1-9][0-9]*\nleader: 10.0.0.1:8080\nleader: 10.0.0.2:8080\nnobody leads\n$`)
	if err != nil || !want.Match(out) {
		t.Fatalf("%v: %s", err, out)
	}
}

// On 5 masters a takeover is seen as one leader change, with the committed epoch: while the new
// grant is being committed the nodes show their own tokens (a smaller epoch), which the
// observer holds back (commitGrace) rather than sending the leader twice. Five takeovers in a
// row, each perhaps through nobody (the resign lands before the grant).
func TestObserveSeesATakeoverOnceWithTheCommittedEpoch(t *testing.T) {
	nodes := servers.Start(t, 5, servers.Flavour{})
	needObserve(t, nodes[0])
	ctx := deadline(t, 60*time.Second)
	a, b := connect(t, servers.URLs(nodes)), connect(t, servers.URLs(nodes))
	leading, err := a.Campaign(ctx, "once", "a", lease)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := a.Observe(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	expectLeader(t, "first", nextChange(t, changes, 5*time.Second), &dlock.Leader{ID: leading.ID(), Value: "a", Epoch: leading.Epoch()})
	managers := [2]*dlock.Manager{b, a}
	for round := 0; round < 5; round++ {
		value := fmt.Sprintf("v%d", round)
		next := campaigning(t, ctx, managers[round%2], "once", value)
		time.Sleep(100 * time.Millisecond)
		if err := leading.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		old := leading.ID()
		if leading = <-next; leading == nil {
			t.FailNow()
		}
		// Before the new leader: nobody, or the old one with another epoch while its release
		// spreads (a node granted late keeps its own token, so with a committed node released
		// first the epoch reads as the smallest; the Rust observer sends that too).
		c := nextChange(t, changes, 5*time.Second)
		for c.Err == nil && (c.Leader == nil || c.Leader.ID == old) {
			c = nextChange(t, changes, 5*time.Second)
		}
		what := fmt.Sprintf("takeover %d", round)
		expectLeader(t, what, c, &dlock.Leader{ID: leading.ID(), Value: value, Epoch: leading.Epoch()})
		select {
		case c := <-changes:
			t.Fatalf("%s: a second change %+v %v", what, c.Leader, c.Err)
		case <-time.After(400 * time.Millisecond):
		}
	}
}
