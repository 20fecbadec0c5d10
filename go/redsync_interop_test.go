package dlock_test

// The real redsync (github.com/go-redsync/redsync/v4, its redis/goredis/v9 pool) and dlock on one
// application's go-redis clients, on the same resources of three masters: while one holds a
// resource the other cannot take it. redsync's lock is a string key (SET NX PX), dlock's a key of
// the module's type: redsync's SET NX finds dlock's key there, and DLOCK.ACQUIRE on redsync's
// string is refused (WRONGTYPE), so a program can move from one to the other resource by
// resource while both run (docs/migrating/redsync.md).

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	goredis "dlock.dev/dlock/redis/goredis/v9"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// bothOnGoRedis: one go-redis client per node, made into redsync's pools and dlock's.
func bothOnGoRedis(t *testing.T, nodes []*servers.Server) (*redsync.Redsync, *dlock.Manager) {
	var theirs []redsyncredis.Pool
	var ours []dlock.Pool
	for _, n := range nodes {
		c := goredislib.NewClient(&goredislib.Options{Addr: fmt.Sprintf("127.0.0.1:%d", n.Port)})
		t.Cleanup(func() { _ = c.Close() })
		theirs = append(theirs, redsyncgoredis.NewPool(c))
		ours = append(ours, goredis.NewPool(c))
	}
	m, err := dlock.NewManager(ours, dlock.WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return redsync.New(theirs...), m
}

func TestRedsyncAndDlockOnGoRedisExcludeEachOther(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	rs, m := bothOnGoRedis(t, nodes)
	ctx := deadline(t, 30*time.Second)

	theirs := rs.NewMutex("shared", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	if err := theirs.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx, "shared", 10*time.Second); err == nil {
		t.Fatal("dlock took a resource redsync holds")
	} else {
		t.Logf("dlock while redsync holds it: %v", err)
	}
	if ok, err := theirs.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync's unlock: %v %v", ok, err)
	}
	ours, err := m.Acquire(ctx, "shared", 10*time.Second)
	if err != nil {
		t.Fatalf("dlock once redsync let go: %v", err)
	}
	if err := rs.NewMutex("shared", redsync.WithTries(1)).TryLockContext(ctx); err == nil {
		t.Fatal("redsync took a resource dlock holds")
	}
	if err := ours.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again := rs.NewMutex("shared", redsync.WithTries(1))
	if err := again.TryLockContext(ctx); err != nil {
		t.Fatalf("redsync once dlock let go: %v", err)
	}
	_, _ = again.UnlockContext(ctx)
}

// Contending for real: a redsync and a dlock worker take one resource in turn, by trying again;
// their critical sections never overlap.
func TestRedsyncAndDlockContendingNeverOverlap(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	rs, m := bothOnGoRedis(t, nodes)
	ctx := deadline(t, 60*time.Second)
	var inside, overlaps, rounds atomic.Int32
	section := func() {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		inside.Add(-1)
		rounds.Add(1)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 10 && ctx.Err() == nil; {
			mutex := rs.NewMutex("contended", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
			if mutex.TryLockContext(ctx) != nil {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			section()
			_, _ = mutex.UnlockContext(ctx)
			i++
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 10 && ctx.Err() == nil; {
			lock, err := m.Acquire(ctx, "contended", 10*time.Second)
			if err != nil {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			section()
			_ = lock.Release(ctx)
			i++
		}
	}()
	wg.Wait()
	if overlaps.Load() != 0 || rounds.Load() != 20 {
		t.Fatalf("%d overlaps in %d rounds (%v)", overlaps.Load(), rounds.Load(), ctx.Err())
	}
}
