package dlock_test

// Sets across slots on a real Redis Cluster (three masters, their replicas): taken group by
// group, each resource on the master serving it under its group's token; a later group held
// elsewhere gives back the earlier ones; opposite orders neither deadlock nor overlap; release
// frees everything; one group lost loses the set.

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"dlock.dev/dlock/transport"
)

// onMaster is key's DLOCK.STATUS on the master serving its slot (nil when free).
func onMaster(t *testing.T, c *servers.Cluster, key string) map[string]interface{} {
	t.Helper()
	master, _ := c.Holders(t, transport.KeySlot(key))
	return status(t, master, key)
}

// freeOnMasters waits until no master holds one of keys.
func freeOnMasters(t *testing.T, c *servers.Cluster, keys ...string) {
	t.Helper()
	servers.Eventually(t, 10*time.Second, fmt.Sprintf("%v free", keys), func() bool {
		for _, k := range keys {
			if onMaster(t, c, k) != nil {
				return false
			}
		}
		return true
	})
}

// bySlot is keys in the order a set takes them on a Cluster: slot, then key.
func bySlot(keys ...string) []string {
	sorted := append([]string{}, keys...)
	sort.Slice(sorted, func(i, j int) bool {
		si, sj := transport.KeySlot(sorted[i]), transport.KeySlot(sorted[j])
		return si < sj || si == sj && sorted[i] < sorted[j]
	})
	return sorted
}

func TestSetsAcrossSlotsOnACluster(t *testing.T) {
	c := servers.StartCluster(t)
	seed := fmt.Sprintf("redis+cluster://127.0.0.1:%d", c.Nodes[0].Port)
	m := connect(t, []string{seed}, dlock.WithTimeout(time.Second), dlock.WithAckTimeout(2*time.Second))

	t.Run("granted whole, each resource under its group's token, release frees everything", func(t *testing.T) {
		ctx := deadline(t, 30*time.Second)
		keys := []string{"acct:1", "{ledger}:in", "acct:2", "{ledger}:out"}
		set, err := m.AcquireAll(ctx, keys, 10*time.Second, dlock.Modes(dlock.Exclusive, dlock.SharedKind, dlock.Exclusive, dlock.Exclusive))
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := set.Tokens(ctx)
		if err != nil || len(tokens) != len(keys) {
			t.Fatalf("tokens %v: %v", tokens, err)
		}
		for i, k := range keys {
			st := onMaster(t, c, k)
			if i == 1 { // shared: its holders listed
				if st == nil || st["kind"] != "shared" {
					t.Errorf("%s on its master: %v, want shared", k, st)
				}
				continue
			}
			if token, _ := st["token"].(int64); uint64(token) != tokens[i] {
				t.Errorf("%s on its master: %v, want token %d", k, st, tokens[i])
			}
		}
		if tokens[1] != tokens[3] { // one slot ({ledger}): one group, one token
			t.Errorf("{ledger}:in %d, {ledger}:out %d", tokens[1], tokens[3])
		}
		if _, err := set.Token(ctx); !errors.Is(err, dlock.ErrInvalidArgument) {
			t.Errorf("Token of a set across 3 slots: %v", err)
		}
		if set.Validity() <= 0 || set.Err() != nil {
			t.Errorf("validity %v, err %v", set.Validity(), set.Err())
		}
		if err := set.Extend(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if err := set.Release(ctx); err != nil {
			t.Fatal(err)
		}
		freeOnMasters(t, c, keys...)
		if err := set.Release(ctx); err != nil || set.Context().Err() == nil {
			t.Errorf("released again: %v (context %v)", err, set.Context().Err())
		}
	})

	t.Run("a later group held elsewhere: the call fails and the earlier groups are free", func(t *testing.T) {
		ctx := deadline(t, 30*time.Second)
		keys := []string{"x:1", "x:2", "x:3"}
		order := bySlot(keys...)
		blocker, err := m.Acquire(ctx, order[2], 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.AcquireAll(ctx, keys, 10*time.Second)
		var e *dlock.Error
		if !errors.Is(err, dlock.ErrContended) || !errors.As(err, &e) || e.Resource != order[2] {
			t.Fatalf("the last group held: %v, want its ErrContended", err)
		}
		freeOnMasters(t, c, order[0], order[1])
		// With a wait: the same, once the wait (shared by every group) is over.
		start := time.Now()
		_, err = m.AcquireAll(ctx, keys, 10*time.Second, dlock.Wait(700*time.Millisecond))
		if !errors.Is(err, dlock.ErrContended) || time.Since(start) > 5*time.Second {
			t.Fatalf("waiting for the last group: %v after %v", err, time.Since(start))
		}
		freeOnMasters(t, c, order[0], order[1])
		_ = blocker.Release(ctx)
	})

	t.Run("opposite orders neither deadlock nor overlap", func(t *testing.T) {
		ctx := deadline(t, 90*time.Second)
		var inside, overlaps, done int64
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			keys := []string{"p", "q", "r"}
			if i%2 == 1 {
				keys = []string{"r", "q", "p"}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := 0; round < 10; round++ {
					set, err := m.AcquireAll(ctx, keys, 10*time.Second, dlock.Wait(30*time.Second))
					if err != nil {
						errs <- err
						return
					}
					if atomic.AddInt64(&inside, 1) != 1 {
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
		if overlaps != 0 || done != 40 {
			t.Errorf("%d overlaps, %d of 40 rounds done", overlaps, done)
		}
		freeOnMasters(t, c, "p", "q", "r")
	})

	t.Run("one group lost: extend says lost and the other groups are given back", func(t *testing.T) {
		ctx := deadline(t, 30*time.Second)
		keys := []string{"m:1", "m:2", "m:3"}
		set, err := m.AcquireAll(ctx, keys, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		master, _ := c.Holders(t, transport.KeySlot("m:2"))
		if _, err := master.Do("DEL", "m:2"); err != nil {
			t.Fatal(err)
		}
		if err := set.Extend(ctx, 0); !errors.Is(err, dlock.ErrLockLost) {
			t.Fatalf("extending a set missing a group: %v, want ErrLockLost", err)
		}
		select {
		case <-set.Context().Done():
		case <-ctx.Done():
			t.Fatal("the loss signal never came")
		}
		if !errors.Is(set.Err(), dlock.ErrLockLost) {
			t.Errorf("lost: %v", set.Err())
		}
		freeOnMasters(t, c, keys...)
		_ = set.Release(ctx)
	})

	t.Run("one group lost while watched: the loss signal, the rest given back", func(t *testing.T) {
		ctx := deadline(t, 30*time.Second)
		keys := []string{"w:1", "w:2", "w:3"}
		set, err := m.AcquireAll(ctx, keys, 1500*time.Millisecond) // watched: extended every 500 ms
		if err != nil {
			t.Fatal(err)
		}
		stop := set.Watch()
		master, _ := c.Holders(t, transport.KeySlot("w:3"))
		if _, err := master.Do("DEL", "w:3"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-set.Context().Done():
		case <-ctx.Done():
			t.Fatal("the loss signal never came")
		}
		if !stop() || !errors.Is(set.Err(), dlock.ErrLockLost) {
			t.Errorf("lost: %v", set.Err())
		}
		freeOnMasters(t, c, keys...)
		_ = set.Release(ctx)
	})
}
