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
	if took < 300*time.Millisecond || took > 900*time.Millisecond {
		t.Fatalf("deadline 300ms, answered after %v", took)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
