package dlock_test

// The client against real redis-server processes with the module: fencing, queue handoff,
// cancellation withdrawing the wait, the watchdog and the lost-lock signal, kinds, reentrancy,
// bad input refused before any node is asked, no quorum naming the nodes.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"github.com/gomodule/redigo/redis"
)

// deadline is a test's own time limit for what it waits on (go test -timeout bounds the run).
func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// connect is a manager over urls through the driver driverFor picks for t (an option given
// after it, such as the seam tests' WithDriver, overrides it).
func connect(t *testing.T, urls []string, options ...dlock.Option) *dlock.Manager {
	t.Helper()
	m, err := dlock.Connect(urls, append([]dlock.Option{dlock.WithDriver(driverFor(t))}, options...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// status is DLOCK.STATUS's fields on one server (nil when free).
func status(t *testing.T, s *servers.Server, key string) map[string]interface{} {
	t.Helper()
	r, err := s.Do("DLOCK.STATUS", key)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil {
		return nil
	}
	list := r.([]interface{})
	m := map[string]interface{}{}
	for i := 0; i+1 < len(list); i += 2 {
		v := list[i+1]
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		k := list[i]
		if b, ok := k.([]byte); ok {
			k = string(b)
		}
		m[fmt.Sprint(k)] = v
	}
	return m
}

func TestFencingCommitsTheTokenOnEveryNode(t *testing.T) {
	nodes := servers.Start(t, 5, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "fenced", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	token := tokenOf(t, lock) // one attempt: the commit is paid here, held once 3 of 5 committed
	for _, s := range nodes {
		servers.Eventually(t, 5*time.Second, s.URL()+" committed", func() bool {
			st := status(t, s, "fenced")
			return st["owner"] == lock.Owner() && uint64(st["token"].(int64)) == token
		})
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range nodes {
		if st := status(t, s, "fenced"); st != nil {
			t.Errorf("%s still holds: %v", s.URL(), st)
		}
	}
}

func TestQueueHandoffInTicketOrderWithRisingTokens(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 60*time.Second)
	held, err := m.Acquire(ctx, "queue", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	got := make(chan *dlock.Lock, waiters)
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		// A manager each: one manager's callers queue in the process (local_waits.go).
		w := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
		go func() {
			l, err := w.Acquire(ctx, "queue", 10*time.Second, dlock.Wait(20*time.Second))
			if err != nil {
				errs <- err
				return
			}
			got <- l
		}()
		time.Sleep(30 * time.Millisecond) // tickets in this order
	}
	waitWaiters(t, nodes[0], "queue", waiters)
	last := tokenOf(t, held)
	_ = held.Release(ctx)
	for i := 0; i < waiters; i++ {
		select {
		case l := <-got:
			if tokenOf(t, l) <= last {
				t.Errorf("token %d after %d", tokenOf(t, l), last)
			}
			last = tokenOf(t, l)
			_ = l.Release(ctx)
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal("a waiter was never served")
		}
	}
}

// waitWaiters waits until n clients wait for key on s.
func waitWaiters(t *testing.T, s *servers.Server, key string, n int) {
	t.Helper()
	servers.Eventually(t, 10*time.Second, fmt.Sprintf("%d waiters", n), func() bool {
		r, err := redis.Values(s.Do("DLOCK.WAITERS", key))
		return err == nil && len(r) >= n
	})
}

func TestCancellingWithdrawsTheWaitFromEveryQueue(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	held, err := m.Acquire(ctx, "cancel", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.Acquire(wctx, "cancel", 10*time.Second, dlock.Wait(20*time.Second))
		done <- err
	}()
	for _, s := range nodes { // queued everywhere: a wait still on its way is not withdrawn
		waitWaiters(t, s, "cancel", 1)
	}
	started := time.Now()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if took := time.Since(started); took > 2*time.Second {
		t.Errorf("cancel took %v", took)
	}
	for _, s := range nodes {
		if r, _ := redis.Values(s.Do("DLOCK.WAITERS", "cancel")); len(r) != 0 {
			t.Errorf("%s: still waiting: %v", s.URL(), r)
		}
	}
	_ = held.Release(ctx)
}

func TestWatchdogKeepsTheLockPastItsTTL(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	var token uint64
	err := m.WithLock(ctx, "watched", 300*time.Millisecond, func(ctx context.Context, l *dlock.Lock) error {
		token = tokenOf(t, l)
		select {
		case <-time.After(time.Second): // past three TTLs
		case <-ctx.Done():
			return fmt.Errorf("lost: %v", l.Err())
		}
		if st := status(t, nodes[1], "watched"); st["owner"] != l.Owner() {
			return fmt.Errorf("not held: %v", st)
		}
		return nil
	})
	if err != nil || token == 0 {
		t.Fatal(err, token)
	}
	if st := status(t, nodes[0], "watched"); st != nil {
		t.Errorf("not released: %v", st)
	}
}

func TestTheLostLockSignal(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	err := m.WithLock(ctx, "lost", time.Second, func(ctx context.Context, l *dlock.Lock) error {
		for _, s := range nodes[:2] { // a majority forgets it: the next extension fails
			if _, err := s.Do("DLOCK.FORCERELEASE", "lost"); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if !errors.Is(l.Err(), dlock.ErrLockLost) {
				return fmt.Errorf("Err() = %v", l.Err())
			}
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("no loss signal")
		}
	})
	if !errors.Is(err, dlock.ErrLockLost) {
		t.Fatalf("WithLock: %v, want ErrLockLost", err)
	}
}

// Context ends at the renew deadline while a watchdog keeps the lock (two nodes frozen: no
// extension confirmed), and with validity without one (there is no renew deadline then).
func TestContextEndsAtTheRenewDeadlineWhileWatched(t *testing.T) {
	for _, watched := range []bool{true, false} {
		t.Run(fmt.Sprintf("watched %v", watched), func(t *testing.T) {
			nodes := servers.Start(t, 3, servers.Flavour{})
			m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
			ctx := deadline(t, 30*time.Second)
			lock, err := m.Acquire(ctx, "lease", 400*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			until := lock.Until()
			time.Sleep(200 * time.Millisecond)
			if err := lock.Extend(ctx, 0); err != nil { // moves the deadline
				t.Fatal(err)
			}
			if !lock.Until().After(until) {
				t.Errorf("Extend did not move the deadline: %v then %v", until, lock.Until())
			}
			end := lock.Until()
			if watched {
				stop := lock.Watch()
				defer stop()
				for _, s := range nodes[1:] {
					s.Pause()
					defer s.Resume()
				}
				// The renew deadline is a tenth of the TTL before validity ends (docs/election.md).
				end = end.Add(-40 * time.Millisecond)
			}
			select {
			case <-lock.Context().Done():
				if late := time.Since(end); late < 0 || late > 50*time.Millisecond {
					t.Errorf("done %v after %v", late, end)
				}
				if !errors.Is(lock.Err(), dlock.ErrLockLost) {
					t.Errorf("Err() = %v", lock.Err())
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the context outlived the lease")
			}
		})
	}
}

// countingPool is a pool that must never be asked.
type countingPool struct{ gets *int64 }

func (p countingPool) Get(context.Context) (dlock.Conn, error) {
	atomic.AddInt64(p.gets, 1)
	return nil, errors.New("asked")
}

func TestBadInputIsRefusedBeforeAnyNodeIsAsked(t *testing.T) {
	var gets int64
	m := dlock.New(countingPool{&gets}, countingPool{&gets}, countingPool{&gets})
	ctx := deadline(t, 10*time.Second)
	bad := map[string]error{}
	_, bad["ttl 0"] = m.Acquire(ctx, "r", 0)
	_, bad["ttl 1µs"] = m.Acquire(ctx, "r", time.Microsecond)
	_, bad["empty name"] = m.Acquire(ctx, "", time.Second)
	_, bad["ttl 2ms: no validity after the drift allowance"] = m.Acquire(ctx, "r", 2*time.Millisecond)
	_, bad["ttl over a day"] = m.Acquire(ctx, "r", 25*time.Hour)
	_, bad["wait over ten years"] = m.Acquire(ctx, "r", time.Second, dlock.Wait(dlock.MaxWait+time.Millisecond))
	_, bad["campaign ttl 1ms"] = m.Campaign(ctx, "e", "", time.Millisecond)
	_, bad["negative wait"] = m.Acquire(ctx, "r", time.Second, dlock.Wait(-1))
	_, bad["limit 0"] = m.Acquire(ctx, "r", time.Second, dlock.Limit(0))
	_, bad["limit 10001"] = m.Acquire(ctx, "r", time.Second, dlock.Limit(10001))
	_, bad["shared and limit"] = m.Acquire(ctx, "r", time.Second, dlock.Shared(), dlock.Limit(2))
	bad["mutex expiry 0"] = m.NewMutex("r", dlock.WithExpiry(0)).Lock()
	bad["mutex tries 0"] = m.NewMutex("r", dlock.WithTries(0)).Lock()
	bad["mutex TLS"] = m.NewMutex("r", dlock.WithCredentials("u", "p")).Lock()
	bad["no pools"] = dlock.New().NewMutex("r").Lock()
	_, bad["timeout 0"] = dlock.Connect([]string{"redis://127.0.0.1:1"}, dlock.WithTimeout(0))
	_, bad["no URLs"] = dlock.Connect(nil)
	_, bad["twice the same node"] = dlock.Connect([]string{"redis://h:1", "redis://h:1"})
	_, bad["missing CA"] = dlock.Connect([]string{"rediss://h:1"}, dlock.WithTLSFiles("/nonexistent/ca.pem", "", ""))
	_, bad["drift -1"] = dlock.Connect([]string{"redis://h:1"}, dlock.WithDriftFactor(-1))
	_, bad["drift 1"] = dlock.Connect([]string{"redis://h:1"}, dlock.WithDriftFactor(1))
	_, bad["timeout over ten years"] = dlock.Connect([]string{"redis://h:1"}, dlock.WithTimeout(dlock.MaxWait+1))
	_, bad["password in a bad URL"] = dlock.Connect([]string{"redis://u:hunter2@h:notaport"})
	for what, err := range bad {
		if !errors.Is(err, dlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
		if err != nil && (errors.Is(err, dlock.ErrFailed)) {
			t.Errorf("%s: a bad argument is not a failed acquisition", what)
		}
	}
	said := map[string]string{
		"empty name": "the resource name must not be empty",
		"ttl 2ms: no validity after the drift allowance": "ttl must be at least 3 ms: a shorter one leaves no validity after the clock drift allowance (1% of the TTL + 2 ms), got 2 ms",
		"wait over ten years":                            "wait must be at most 315360000000 ms (ten years, the longest the nodes take)",
	}
	for what, words := range said {
		if err := bad[what]; err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v, want %q", what, err, words)
		}
	}
	if err := bad["password in a bad URL"]; err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the password shows: %v", err)
	}
	if gets != 0 {
		t.Errorf("%d nodes asked", gets)
	}
}

func TestNoQuorumNamesTheNodesAndRecovers(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(300*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	nodes[1].Kill()
	nodes[2].Kill()
	_, err := m.Acquire(ctx, "down", time.Second)
	var e *dlock.Error
	if !errors.As(err, &e) || !errors.Is(err, dlock.ErrNoQuorum) || e.Needed != 2 || len(e.Failures) != 2 {
		t.Fatalf("%v", err)
	}
	for _, f := range e.Failures {
		if f.Node != nodes[1].URL() && f.Node != nodes[2].URL() {
			t.Errorf("names %s", f.Node)
		}
	}
	nodes[2].Spawn()
	if !nodes[2].Ready(10 * time.Second) {
		t.Fatal("no restart")
	}
	l, err := m.Acquire(ctx, "down", time.Second, dlock.Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
}

func TestAHeldLockIsContendedAtEveryShortWait(t *testing.T) {
	for _, n := range []int{1, 5} {
		nodes := servers.Start(t, n, servers.Flavour{})
		holder := connect(t, servers.URLs(nodes))
		m := connect(t, servers.URLs(nodes)) // the default 50 ms per-node timeout
		ctx := deadline(t, 30*time.Second)
		held, err := holder.Acquire(ctx, "busy", 30*time.Second, dlock.Wait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, wait := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond} {
			for i := 0; i < 5; i++ {
				if _, err := m.Acquire(ctx, "busy", time.Second, dlock.Wait(wait)); !errors.Is(err, dlock.ErrContended) {
					t.Errorf("%d nodes, wait %v: %v", n, wait, err)
				}
			}
		}
		_ = held.Release(ctx)
	}
}

func TestContendersNeverOverlap(t *testing.T) {
	nodes := servers.Start(t, 5, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 60*time.Second)
	var mu sync.Mutex
	inside, last := 0, uint64(0)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				l, err := m.Acquire(ctx, "shared-counter", 10*time.Second, dlock.Wait(30*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				if inside != 1 || tokenOf(t, l) <= last {
					t.Errorf("overlap or token %d after %d", tokenOf(t, l), last)
				}
				last = tokenOf(t, l)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				_ = l.Release(ctx)
			}
		}()
	}
	wg.Wait()
}
