package dlock_test

// Sentinel and Cluster deployments as quorum nodes, made as an operator makes them: a master,
// its replica and three sentinels (a failover followed with rising tokens); a Redis Cluster of
// three masters and three replicas (locks on the right master acknowledged by its replica, a
// cluster and two masters as one quorum, a slot moved under a held lock).

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"dlock.dev/dlock/transport"
	"github.com/gomodule/redigo/redis"
)

func TestSentinel(t *testing.T) {
	d := servers.StartSentinels(t)
	ctx := deadline(t, 90*time.Second)
	opts := []dlock.Option{dlock.WithTimeout(time.Second), dlock.WithAckTimeout(2 * time.Second), dlock.WithSentinelCredentials("", d.Password)}
	m := connect(t, []string{d.URL()}, opts...)

	// On the master the sentinels name, acknowledged by its replica (AckAuto).
	lock, err := m.Acquire(ctx, "sentinel", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st := status(t, d.Data[1], "sentinel"); st["owner"] != lock.Owner() {
		t.Errorf("not on the replica at once: %v", st)
	}
	_ = lock.Release(ctx)

	// A wrong sentinel password is named.
	wrong := connect(t, []string{d.URL()}, dlock.WithTimeout(500*time.Millisecond), dlock.WithSentinelCredentials("", "not-it"))
	_, err = wrong.Acquire(ctx, "sentinel", 10*time.Second)
	var e *dlock.Error
	if !errors.As(err, &e) || !strings.Contains(e.Failures[0].Reason, `no sentinel names a master for "locks"`) {
		t.Fatalf("a wrong sentinel password: %v", err)
	}

	// A failover: the new master is found and tokens keep rising.
	before, err := m.Acquire(ctx, "failover", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := tokenOf(t, before) // read while held: a token owed a commit is not read after release
	_ = before.Release(ctx)
	if _, err := d.Sentinels[0].Do("SENTINEL", "FAILOVER", d.Service); err != nil {
		t.Fatal(err)
	}
	servers.Eventually(t, 20*time.Second, "the failover", func() bool {
		named, _ := redis.Strings(d.Sentinels[0].Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", d.Service))
		role, _ := redis.Values(d.Data[1].Do("ROLE"))
		return len(named) == 2 && named[1] == fmt.Sprint(d.Data[1].Port) && len(role) > 0 && fmt.Sprintf("%s", role[0]) == "master"
	})
	next, err := m.Acquire(ctx, "failover", 10*time.Second, dlock.Wait(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if tokenOf(t, next) <= first {
		t.Errorf("token %d after %d", tokenOf(t, next), first)
	}
	if st := status(t, d.Data[1], "failover"); st["owner"] != next.Owner() {
		t.Errorf("not on the new master: %v", st)
	}
	_ = next.Release(ctx)
}

func TestCluster(t *testing.T) {
	c := servers.StartCluster(t)
	plain := servers.Start(t, 2, servers.Flavour{})
	ctx := deadline(t, 120*time.Second)
	seed := fmt.Sprintf("redis+cluster://127.0.0.1:%d", c.Nodes[0].Port)

	t.Run("key slots as Redis computes them", func(t *testing.T) {
		for _, key := range []string{"orders:42", "{user1000}.following", "a{}b", "x{y}z{w}", "é"} {
			if want, _ := redis.Int(c.Nodes[0].Do("CLUSTER", "KEYSLOT", key)); transport.KeySlot(key) != want {
				t.Errorf("%q: %d, want %d", key, transport.KeySlot(key), want)
			}
		}
	})

	t.Run("locks on the master serving the key, acknowledged by its replica", func(t *testing.T) {
		locksOnTheRightMaster(t, c, seed)
	})

	t.Run("a cluster and two masters make one quorum; a queued wait hands over", func(t *testing.T) {
		clusterAndMastersAsOneQuorum(t, c, plain)
	})

	t.Run("a slot moved under a held lock: ASK during the move, MOVED after it", func(t *testing.T) {
		moveSlotUnderAHeldLock(t, c, seed)
	})

	t.Run("a replica as the seed still finds the masters", func(t *testing.T) {
		_, replica := c.Holders(t, transport.KeySlot("seeded"))
		m := connect(t, []string{fmt.Sprintf("redis+cluster://127.0.0.1:%d", replica.Port)}, dlock.WithTimeout(time.Second), dlock.WithAckTimeout(2*time.Second))
		lock, err := m.Acquire(ctx, "seeded", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = lock.Release(ctx)
	})
}

func moveSlotUnderAHeldLock(t *testing.T, c *servers.Cluster, seed string) {
	const key = "migrating"
	ctx := deadline(t, 60*time.Second)
	m := connect(t, []string{seed}, dlock.WithTimeout(time.Second), dlock.WithReplicaAck(dlock.AckOff))
	lock, err := m.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	slot := transport.KeySlot(key)
	source, _ := c.Holders(t, slot)
	var target *servers.Server
	for _, s := range c.Nodes {
		if m, _ := c.Holders(t, (slot+5461)%16384); s == m && s != source {
			target = s
		}
	}
	if target == nil {
		target, _ = c.Holders(t, (slot+10922)%16384)
	}
	sourceID, _ := redis.String(source.Do("CLUSTER", "MYID"))
	targetID, _ := redis.String(target.Do("CLUSTER", "MYID"))
	must := func(r interface{}, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(target.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", sourceID))
	must(source.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", targetID))
	must(source.Do("MIGRATE", "127.0.0.1", target.Port, "", 0, 5000, "KEYS", key))
	// The ASK window: the source has no key any more, the target has it but not the slot.
	if err := lock.Extend(ctx, 0); err != nil {
		t.Fatalf("extend during the move (ASK): %v", err)
	}
	for _, s := range c.Nodes {
		if role, _ := redis.String(s.Do("INFO", "replication")); strings.Contains(role, "role:master") {
			must(s.Do("CLUSTER", "SETSLOT", slot, "NODE", targetID))
		}
	}
	servers.Eventually(t, 30*time.Second, "the slot announced", func() bool {
		master, _ := c.Holders(t, slot)
		return master == target
	})
	// The client's map still names the source: MOVED, the map updated, the target asked.
	if err := lock.Extend(ctx, 0); err != nil {
		t.Fatalf("extend after the move (MOVED): %v", err)
	}
	if st := status(t, target, key); st["owner"] != lock.Owner() {
		t.Errorf("not on the target: %v", st)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st := status(t, target, key); st != nil {
		t.Errorf("still held: %v", st)
	}
}

// locksOnTheRightMaster: each lock on the master serving its key, acknowledged by its replica.
func locksOnTheRightMaster(t *testing.T, c *servers.Cluster, seed string) {
	ctx := deadline(t, 60*time.Second)
	m := connect(t, []string{seed}, dlock.WithTimeout(time.Second), dlock.WithAckTimeout(2*time.Second))
	for i := 1; i <= 6; i++ {
		key := fmt.Sprintf("c:%d", i)
		lock, err := m.Acquire(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		master, replica := c.Holders(t, transport.KeySlot(key))
		if st := status(t, master, key); st["owner"] != lock.Owner() {
			t.Errorf("%s on its master: %v", key, st)
		}
		onReplica, err := replica.Pipeline([][]interface{}{{"READONLY"}, {"DLOCK.STATUS", key}})
		if r, _ := redis.Values(onReplica[1], err); len(r) < 2 || fmt.Sprintf("%s", r[1]) != lock.Owner() {
			t.Errorf("%s on its replica: %q", key, r)
		}
		_ = lock.Release(ctx)
	}
}

// clusterAndMastersAsOneQuorum: a cluster node and two plain masters, a queued wait handed over.
func clusterAndMastersAsOneQuorum(t *testing.T, c *servers.Cluster, plain []*servers.Server) {
	ctx := deadline(t, 60*time.Second)
	urls := append([]string{fmt.Sprintf("redis+cluster://127.0.0.1:%d", c.Nodes[1].Port)}, servers.URLs(plain)...)
	m := connect(t, urls, dlock.WithTimeout(time.Second), dlock.WithAckTimeout(2*time.Second))
	held, err := m.Acquire(ctx, "mixed", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := tokenOf(t, held) // read while held: one attempt on three nodes commits it here
	waiting := make(chan *dlock.Lock, 1)
	go func() {
		l, err := m.Acquire(ctx, "mixed", 10*time.Second, dlock.Wait(5*time.Second))
		if err != nil {
			t.Error(err)
		}
		waiting <- l
	}()
	waitWaiters(t, plain[0], "mixed", 1)
	_ = held.Release(ctx)
	next := <-waiting
	if next == nil || tokenOf(t, next) <= first {
		t.Fatal("no handover")
	}
	master, _ := c.Holders(t, transport.KeySlot("mixed"))
	servers.Eventually(t, 5*time.Second, "the hold on the cluster", func() bool {
		return status(t, master, "mixed")["owner"] == next.Owner()
	})
	_ = next.Release(ctx)
}
