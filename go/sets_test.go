package dlock_test

// Sets against real redis-server processes: all or nothing on every node, the queued wait, no
// deadlock between sets taken in opposite orders, release, loss, the committed token, shared
// members, and the program docs/go/sets.md shows.

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

// freeEverywhere fails the test when a node holds one of keys.
func freeEverywhere(t *testing.T, nodes []*servers.Server, keys ...string) {
	t.Helper()
	for _, s := range nodes {
		for _, k := range keys {
			if st := status(t, s, k); st != nil {
				t.Errorf("%s holds %s: %v", s.URL(), k, st)
			}
		}
	}
}

func TestASetIsTakenAllOrNothing(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	blocker, err := m.Acquire(ctx, "b", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AcquireAll(ctx, []string{"a", "b", "c"}, 10*time.Second); !errors.Is(err, dlock.ErrContended) {
		t.Fatalf("a member held elsewhere: %v, want ErrContended", err)
	}
	freeEverywhere(t, nodes, "a", "c")
	for _, s := range nodes {
		if st := status(t, s, "b"); st["owner"] != blocker.Owner() {
			t.Errorf("%s: b is %v, want the blocker's", s.URL(), st)
		}
	}
	_ = blocker.Release(ctx)

	set, err := m.AcquireAll(ctx, []string{"a", "b", "c"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	token := tokenOf(t, set) // the commit (FENCEALL) is paid here
	for _, k := range []string{"a", "b", "c"} {
		committed := 0
		for _, s := range nodes {
			st := status(t, s, k)
			if st["owner"] == set.Owner() && uint64(st["token"].(int64)) == token {
				committed++
			}
		}
		if committed < 2 {
			t.Errorf("%s: token %d on %d nodes, want a majority", k, token, committed)
		}
	}
	if got := strings.Join(set.Resources(), " "); got != "a b c" {
		t.Errorf("resources %q", got)
	}
	if err := set.Reenter(ctx); !errors.Is(err, dlock.ErrInvalidArgument) {
		t.Errorf("reentering a set: %v", err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	freeEverywhere(t, nodes, "a", "b", "c")
}

func TestASetWaitsUntilEveryMemberIsFree(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	blocker, err := m.Acquire(ctx, "y", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		set, err := m.AcquireAll(ctx, []string{"x", "y"}, 10*time.Second, dlock.Wait(20*time.Second))
		if err == nil {
			_, err = set.Token(ctx)
			_ = set.Release(ctx)
		}
		got <- err
	}()
	waitWaiters(t, nodes[0], "y", 1)
	freeEverywhere(t, nodes, "x") // queued, holding nothing
	select {
	case err := <-got:
		t.Fatalf("granted while y was held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	_ = blocker.Release(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the set was never granted")
	}
	freeEverywhere(t, nodes, "x", "y")
}

func TestSetsInOppositeOrdersNeitherDeadlockNorOverlap(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 90*time.Second)
	var inside, overlaps, done int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		keys := []string{"p", "q"}
		if i%2 == 1 {
			keys = []string{"q", "p"}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 25; round++ {
				set, err := m.AcquireAll(ctx, keys, 10*time.Second, dlock.Wait(30*time.Second))
				if err != nil {
					errs <- err
					return
				}
				if atomic.AddInt64(&inside, 1) != 1 { // both sets hold p and q: one at a time
					atomic.AddInt64(&overlaps, 1)
				}
				time.Sleep(2 * time.Millisecond)
				atomic.AddInt64(&inside, -1)
				if err := set.Release(ctx); err != nil {
					errs <- err
					return
				}
				atomic.AddInt64(&done, 1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if overlaps != 0 || done != 100 {
		t.Errorf("%d overlaps, %d of 100 rounds done", overlaps, done)
	}
	freeEverywhere(t, nodes, "p", "q")
}

func TestASetMissingAMemberIsLost(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	set, err := m.AcquireAll(ctx, []string{"m1", "m2"}, 1500*time.Millisecond) // watched: extended every 500 ms
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range nodes {
		if _, err := s.Do("DEL", "m2"); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Extend(ctx, 0); !errors.Is(err, dlock.ErrLockLost) {
		t.Fatalf("extending a set missing a member: %v, want ErrLockLost", err)
	}
	stop := set.Watch()
	select {
	case <-set.Context().Done():
	case <-ctx.Done():
		t.Fatal("the loss signal never came")
	}
	if !stop() || !errors.Is(set.Err(), dlock.ErrLockLost) {
		t.Errorf("lost: %v", set.Err())
	}
	freeEverywhere(t, nodes, "m1", "m2") // the nodes gave back what was left
}

func TestSharedMembersAreHeldByTwoSetsAtOnce(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	modes := dlock.Modes(dlock.Exclusive, dlock.SharedKind)
	one, err := m.AcquireAll(ctx, []string{"acct:1", "ledger"}, 10*time.Second, modes)
	if err != nil {
		t.Fatal(err)
	}
	two, err := m.AcquireAll(ctx, []string{"acct:2", "ledger"}, 10*time.Second, modes)
	if err != nil {
		t.Fatalf("a shared member held by another set: %v", err)
	}
	if _, err := m.AcquireAll(ctx, []string{"ledger"}, 10*time.Second); !errors.Is(err, dlock.ErrContended) {
		t.Errorf("ledger exclusive beside its readers: %v", err)
	}
	for _, l := range []*dlock.Lock{one, two} {
		if _, err := l.Token(ctx); err != nil {
			t.Error(err)
		}
		_ = l.Release(ctx)
	}
	freeEverywhere(t, nodes, "acct:1", "acct:2", "ledger")
}

func TestTheSetsExampleRuns(t *testing.T) {
	program := buildExample(t, "sets")
	nodes := servers.Start(t, 3, servers.Flavour{})
	cmd := exec.Command(program)
	cmd.Env = append(os.Environ(), "DLOCK_NODES="+strings.Join(servers.URLs(nodes), ","))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "moved 10 from accounts:1 to accounts:2 under token ") {
		t.Fatalf("%v: %s", err, out)
	}
	freeEverywhere(t, nodes, "accounts:1", "accounts:2", "ledger")
}
