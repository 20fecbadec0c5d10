package dlock_test

// Guarded writes: a holder stalled past its lease is refused at the data's gate (ErrStale, a
// lost lock), the newer holder's write stands; on 1 and 5 lock nodes, the data on its own server.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"github.com/gomodule/redigo/redis"
)

func TestAStalledHoldersGuardedWriteIsRefused(t *testing.T) {
	for _, count := range []int{1, 5} {
		t.Run(fmt.Sprintf("%d nodes", count), func(t *testing.T) {
			all := servers.Start(t, count+1, servers.Flavour{})
			m := connect(t, servers.URLs(all[:count]), dlock.WithTimeout(500*time.Millisecond))
			data, err := redis.DialURL(all[count].URL())
			if err != nil {
				t.Fatal(err)
			}
			defer data.Close()
			ctx := deadline(t, 30*time.Second)
			old, err := m.Acquire(ctx, "report", 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := old.Guarded(data, "report:gate", "SET", "report", "first"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond) // stalled past its lease
			fresh, err := m.Acquire(ctx, "report", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Release(ctx)
			if _, err := fresh.Guarded(data, "report:gate", "SET", "report", "fresh"); err != nil {
				t.Fatal(err)
			}
			// Go's lease-loss contract ended the lock when its validity ended (unwatched: no
			// renew deadline): refused before anything is sent (the gate is for the write already in flight, below).
			_, err = old.Guarded(data, "report:gate", "SET", "report", "stale")
			if !errors.Is(err, dlock.ErrLockLost) {
				t.Fatalf("the stalled holder's write: %v, want ErrLockLost", err)
			}
			if got, _ := redis.String(data.Do("GET", "report")); got != "fresh" {
				t.Errorf("report = %q, want fresh", got)
			}
		})
	}
}

// A write that reaches the gate after a newer holder's (sent before its lease ended, delayed
// on the way, or from a holder whose deadline timer has not fired yet) is refused there.
func TestAGateANewerHolderRaisedRefusesTheWriteAndTheLockIsLost(t *testing.T) {
	nodes := servers.Start(t, 1, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	data, err := redis.DialURL(nodes[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	if _, err := data.Do("DLOCK.GUARD", "job:gate", tokenOf(t, lock)+1, "SET", "job:out", "newer"); err != nil {
		t.Fatal(err)
	}
	_, err = lock.Guarded(data, "job:gate", "SET", "job:out", "mine")
	if !errors.Is(err, dlock.ErrStale) || !errors.Is(err, dlock.ErrLockLost) {
		t.Fatalf("got %v, want ErrStale", err)
	}
	if lock.Context().Err() == nil || !errors.Is(lock.Err(), dlock.ErrStale) {
		t.Errorf("the lock is not marked lost: %v", lock.Err())
	}
	// Known lost: nothing more is sent, not even through a gate nobody raised.
	if _, err := lock.Guarded(data, "other:gate", "SET", "job:out", "x"); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("after the loss: %v", err)
	}
	if got, _ := redis.String(data.Do("GET", "job:out")); got != "newer" {
		t.Errorf("job:out = %q, want newer", got)
	}
	if n, _ := redis.Int(data.Do("EXISTS", "other:gate")); n != 0 {
		t.Error("a write was sent for a lost lock")
	}
}
