package dlock_test

// The driver seam (transport.Pool, transport.Conn) on both drivers against real servers: a
// pipeline's replies in order on one connection, in the seam's types, in one round trip; server-side waits each on
// a connection of its own beside requests that are not held up; an application's go-redis
// client through redis/goredis/v9, and a client with no connection of one server refused.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	goredis "dlock.dev/dlock/redis/goredis/v9"
	"dlock.dev/dlock/redis/redigo"
	"dlock.dev/dlock/transport"
	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
)

// poolOf is an application's pool of driver d to the server at addr.
func poolOf(d dlock.Driver, addr string) dlock.Pool {
	if d == dlock.GoRedis {
		return goredis.NewPool(goredislib.NewClient(&goredislib.Options{Addr: addr}))
	}
	return redigo.NewPool(&redigolib.Pool{Dial: func() (redigolib.Conn, error) { return redigolib.Dial("tcp", addr) }})
}

func TestSeamPipelinesRepliesInOrderOnOneConnection(t *testing.T) {
	s := servers.Start(t, 1, servers.Flavour{})[0]
	onBothDrivers(t, func(t *testing.T, d dlock.Driver) {
		ctx := deadline(t, 10*time.Second)
		pool := poolOf(d, fmt.Sprintf("127.0.0.1:%d", s.Port))
		conn, err := pool.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Do(ctx, []string{"PING"}); err != nil { // connected before counting
			t.Fatal(err)
		}
		// What reading the count costs itself (its own read, the last count's connection closing).
		first := readsProcessed(t, s)
		before := readsProcessed(t, s)
		cost := before - first
		key := "seam-" + string(d)
		replies, err := conn.Do(ctx,
			[]string{"CLIENT", "ID"},
			[]string{"SET", key, "9007199254740993"},
			[]string{"INCR", key},
			[]string{"GET", "missing-" + key},
			[]string{"LPUSH", key, "x"},
			[]string{"EVAL", "return {1, 'two', redis.error_reply('ERR three'), false}", "0"},
			[]string{"CLIENT", "ID"})
		if err != nil {
			t.Fatal(err)
		}
		// One round trip: the seven commands reached the server in one read (two at most, should
		// the kernel split the write), not seven.
		reads := readsProcessed(t, s) - before - cost
		if reads < 1 || reads > 2 {
			t.Errorf("the pipeline took %d reads on the server", reads)
		}
		t.Logf("%d commands in %d read(s) on the server", 7, reads)
		want := []interface{}{replies[0], "OK", int64(9007199254740994), nil,
			transport.Error("WRONGTYPE Operation against a key holding the wrong kind of value"),
			[]interface{}{int64(1), "two", transport.Error("ERR three"), nil}, replies[0]}
		if fmt.Sprintf("%#v", replies) != fmt.Sprintf("%#v", want) {
			t.Errorf("replies\n got %#v\nwant %#v", replies, want)
		}
		if _, ok := replies[0].(int64); !ok {
			t.Errorf("CLIENT ID: %#v", replies[0])
		}
	})
}

// readsProcessed is the server's count of reads from its clients (INFO stats).
func readsProcessed(t *testing.T, s *servers.Server) int {
	t.Helper()
	info, err := redigolib.String(s.Do("INFO", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no total_reads_processed in INFO stats")
	return 0
}

func TestSeamWaitsEachHoldAConnectionAndHoldUpNothingElse(t *testing.T) {
	s := servers.Start(t, 1, servers.Flavour{})[0]
	onBothDrivers(t, func(t *testing.T, d dlock.Driver) {
		ctx := deadline(t, 30*time.Second)
		m := connect(t, []string{s.URL()}, dlock.WithTimeout(500*time.Millisecond), dlock.WithDriver(d))
		// Three resources held, a wait on each (one manager keeps one wait per resource:
		// local_waits.go): three connections blocked on the server.
		const waiters = 3
		key := func(i int) string { return fmt.Sprintf("wait-%s-%d", d, i) }
		var held []*dlock.Lock
		for i := 0; i < waiters; i++ {
			l, err := m.Acquire(ctx, key(i), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, l)
		}
		tokens := make(chan error, waiters)
		for i := 0; i < waiters; i++ {
			go func(i int) {
				l, err := m.Acquire(ctx, key(i), 10*time.Second, dlock.Wait(20*time.Second))
				if err == nil {
					err = l.Release(ctx)
				}
				tokens <- err
			}(i)
		}
		for i := 0; i < waiters; i++ {
			waitWaiters(t, s, key(i), 1)
		}
		started := time.Now()
		other, err := m.Acquire(ctx, key(0)+"-other", 10*time.Second)
		if err != nil || time.Since(started) > time.Second {
			t.Fatalf("a request beside the waits: %v after %v", err, time.Since(started))
		}
		_ = other.Release(ctx)
		for _, l := range held {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < waiters; i++ {
			if err := <-tokens; err != nil {
				t.Errorf("waiter: %v", err)
			}
		}
	})
}

// An application's go-redis client, redsync's way: New over goredis.NewPool, a Mutex locked,
// its token read, unlocked; the application's client untouched and still usable.
func TestAGoRedisApplicationClientLocksThroughNewPool(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	ctx := deadline(t, 30*time.Second)
	var pools []dlock.Pool
	var clients []*goredislib.Client
	for _, n := range nodes {
		c := goredislib.NewClient(&goredislib.Options{Addr: fmt.Sprintf("127.0.0.1:%d", n.Port)})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	m := dlock.New(pools...)
	t.Cleanup(func() { _ = m.Close() })
	mutex := m.NewMutex("app-goredis")
	if err := mutex.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if token, err := mutex.TokenContext(ctx); err != nil || token == 0 {
		t.Fatalf("token %d: %v", token, err)
	}
	if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("unlock: %v %v", ok, err)
	}
	if err := clients[0].Ping(ctx).Err(); err != nil {
		t.Errorf("the application's client: %v", err)
	}
}

func TestAGoRedisClusterClientIsRefusedWithWhatToDo(t *testing.T) {
	c := goredislib.NewClusterClient(&goredislib.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	m := dlock.New(goredis.NewPool(c))
	defer m.Close()
	_, err := m.Acquire(deadline(t, 10*time.Second), "r", time.Second)
	if !errors.Is(err, dlock.ErrNoQuorum) || !strings.Contains(err.Error(), "one *redis.Client per node") {
		t.Fatalf("%v", err)
	}
	if goredis.NewPool(nil) != nil || goredis.NewPool((*goredislib.Client)(nil)) != nil {
		t.Error("a nil client makes a pool")
	}
}
