package dlock_test

// Many local waiters, few server waits (local_waits.go): the callers of one manager waiting for
// one resource keep one wait on each node, not one each, and are all served, one at a time.

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"github.com/gomodule/redigo/redis"
)

// blocked is a node's count of connections inside a server-side wait (INFO clients).
func blocked(t *testing.T, s *servers.Server) int {
	t.Helper()
	info, err := s.Do("INFO", "clients")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info.([]byte)), "\r\n") {
		if strings.HasPrefix(line, "blocked_clients:") {
			count, err := strconv.Atoi(strings.TrimPrefix(line, "blocked_clients:"))
			if err != nil {
				t.Fatal(err)
			}
			return count
		}
	}
	t.Fatal("no blocked_clients in INFO clients")
	return 0
}

func TestFiveHundredLocalWaitersKeepOneWaitPerNodeAndAreAllServed(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	holder := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 60*time.Second)
	held, err := holder.Acquire(ctx, "r", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var inside atomic.Bool
	var served atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	for i := 0; i < 500; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.Acquire(ctx, "r", 10*time.Second, dlock.Wait(50*time.Second))
			if err != nil {
				errs <- err
				return
			}
			if inside.Swap(true) {
				errs <- errors.New("two holders at once")
			}
			served.Add(1)
			inside.Store(false)
			errs <- l.Release(ctx)
		}()
	}
	for _, n := range nodes {
		waitWaiters(t, n, "r", 1)
	}
	time.Sleep(200 * time.Millisecond)
	for _, n := range nodes {
		if b := blocked(t, n); b != 1 {
			t.Fatalf("%d blocked connections on a node, want 1", b)
		}
		if q, err := redis.Values(n.Do("DLOCK.WAITERS", "r")); err != nil || len(q) != 1 {
			t.Fatalf("%d owners queued on a node, want 1 (%v)", len(q), err)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if served.Load() != 500 {
		t.Fatalf("%d served, want 500", served.Load())
	}
}

func TestALocalWaiterWhoseTimeRunsOutIsToldContendedOnTime(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	holder := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	held, err := holder.Acquire(ctx, "r", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx, "r", 10*time.Second, dlock.Wait(5*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		first <- err
	}()
	for _, n := range nodes {
		waitWaiters(t, n, "r", 1)
	}
	started := time.Now()
	_, err = m.Acquire(ctx, "r", 10*time.Second, dlock.Wait(300*time.Millisecond))
	took := time.Since(started)
	if !errors.Is(err, dlock.ErrContended) {
		t.Fatalf("want contended, got %v", err)
	}
	// On time: well before the first's 5 s wait ends, with room for a loaded 2-core machine.
	if took < 300*time.Millisecond || took > 2500*time.Millisecond {
		t.Fatalf("deadline 300ms, answered after %v", took)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// A shared hold waits on the nodes each time (the local-waits adversary): a turn in the process
// put the second reader behind another process's writer that queued after the first reader.
func TestTwoReadersOfOneManagerHoldTogetherPastAnotherProcesssWriter(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	manager := func() *dlock.Manager {
		return connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	}
	holder, readers, writer := manager(), manager(), manager()
	ctx := deadline(t, 30*time.Second)
	held, err := holder.Acquire(ctx, "rw", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	read := func() chan *dlock.Lock {
		got := make(chan *dlock.Lock, 1)
		go func() {
			l, err := readers.Acquire(ctx, "rw", 10*time.Second, dlock.Shared(), dlock.Wait(3*time.Second))
			if err != nil {
				t.Errorf("a reader: %v", err)
			}
			got <- l
		}()
		return got
	}
	first := read()
	time.Sleep(100 * time.Millisecond)
	second := read()
	time.Sleep(100 * time.Millisecond)
	written := make(chan error, 1)
	go func() {
		l, err := writer.Acquire(ctx, "rw", 10*time.Second, dlock.Wait(10*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		written <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	one := <-first
	started := time.Now()
	two := <-second
	if took := time.Since(started); took > time.Second || one == nil || two == nil {
		t.Fatalf("the second reader came %v after the first (behind the writer)", took)
	}
	_ = two.Release(ctx)
	_ = one.Release(ctx)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}
