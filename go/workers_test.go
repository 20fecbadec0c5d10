package dlock_test

// The goroutines that carry the requests to the nodes (backend.go's workers): a queued wait
// holding one never holds up another request, and none outlives Close.

import (
	"runtime"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

func TestAQueuedWaitNeverHoldsUpAnotherRequest(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 30*time.Second)
	held, err := m.Acquire(ctx, "held", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx, "held", 10*time.Second, dlock.Wait(20*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		waited <- err
	}()
	waitWaiters(t, nodes[0], "held", 1)
	for i := 0; i < 20; i++ {
		started := time.Now()
		other, err := m.Acquire(ctx, "other", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = other.Release(ctx)
		if took := time.Since(started); took > 2*time.Second {
			t.Fatalf("a request beside a queued wait took %v", took)
		}
	}
	_ = held.Release(ctx)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}

func TestNoWorkerOutlivesClose(t *testing.T) {
	nodes := servers.Start(t, 5, servers.Flavour{})
	before := runtime.NumGoroutine()
	m, err := dlock.Connect(servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := deadline(t, 30*time.Second)
	for i := 0; i < 10; i++ {
		l, err := m.Acquire(ctx, "idle-workers", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Idle workers end after 10 s on their own: well before that, Close has ended them.
	servers.Eventually(t, 3*time.Second, "the goroutines of before Connect alone", func() bool {
		return runtime.NumGoroutine() <= before
	})
}
