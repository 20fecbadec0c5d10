package dlock_test

// Shared locks, semaphores and the wrong kind; reentrancy (Lock.Reenter, and a reentrant Mutex).

import (
	"errors"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

func TestKinds(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	r1, err1 := m.Acquire(ctx, "rw", 10*time.Second, dlock.Shared())
	r2, err2 := m.Acquire(ctx, "rw", 10*time.Second, dlock.Shared())
	if err1 != nil || err2 != nil || tokenOf(t, r1) == tokenOf(t, r2) {
		t.Fatal("two readers:", err1, err2)
	}
	if _, err := m.Acquire(ctx, "rw", time.Second); !errors.Is(err, dlock.ErrContended) {
		t.Errorf("a writer beside readers: %v", err)
	}
	if _, err := m.Acquire(ctx, "rw", time.Second, dlock.Limit(2)); !errors.Is(err, dlock.ErrWrongKind) {
		t.Errorf("a permit of a shared lock: %v", err)
	}
	p1, err1 := m.Acquire(ctx, "sem", 10*time.Second, dlock.Limit(2))
	p2, err2 := m.Acquire(ctx, "sem", 10*time.Second, dlock.Limit(2))
	if err1 != nil || err2 != nil {
		t.Fatal("two permits:", err1, err2)
	}
	if _, err := m.Acquire(ctx, "sem", time.Second, dlock.Limit(2)); !errors.Is(err, dlock.ErrContended) || !errors.Is(err, dlock.ErrFailed) {
		t.Errorf("a third permit: %v", err)
	}
	waiting := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx, "sem", 10*time.Second, dlock.Limit(2), dlock.Wait(10*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		waiting <- err
	}()
	waitWaiters(t, nodes[0], "sem", 1)
	_ = p1.Release(ctx)
	if err := <-waiting; err != nil {
		t.Errorf("a permit handed over: %v", err)
	}
	for _, l := range []*dlock.Lock{r1, r2, p2} {
		_ = l.Release(ctx)
	}
}

func TestReentrancy(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "again", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Reenter(ctx); err != nil || lock.Holds() != 2 {
		t.Fatal(err, lock.Holds())
	}
	token := tokenOf(t, lock)
	for _, s := range nodes {
		if st := status(t, s, "again"); st["holds"] != int64(2) || uint64(st["token"].(int64)) != token {
			t.Errorf("%s: %v", s.URL(), st)
		}
	}
	_ = lock.Release(ctx)
	if _, err := m.Acquire(ctx, "again", time.Second); !errors.Is(err, dlock.ErrContended) {
		t.Errorf("after one of two releases: %v", err)
	}
	if lock.Context().Err() != nil {
		t.Error("the context ended while a hold is left")
	}
	_ = lock.Release(ctx)
	if lock.Context().Err() == nil {
		t.Error("the context outlived the last release")
	}
	if st := status(t, nodes[0], "again"); st != nil {
		t.Errorf("still held: %v", st)
	}
	// The same through a Mutex taken twice.
	mx := m.NewMutex("again", dlock.WithReentrant(true), dlock.WithExpiry(10*time.Second))
	for i := 0; i < 2; i++ {
		if err := mx.Lock(); err != nil {
			t.Fatalf("a reentrant mutex locked twice: %v", err)
		}
	}
	if ok, err := mx.Unlock(); !ok || err != nil || status(t, nodes[0], "again") == nil {
		t.Fatal("first unlock", ok, err)
	}
	if ok, err := mx.Unlock(); !ok || err != nil || status(t, nodes[0], "again") != nil {
		t.Fatal("second unlock", ok, err)
	}
}
