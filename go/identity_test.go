package dlock_test

// One server never counts twice (issue 48, finding 6; client/tests/identity.rs): nodes are told
// apart by the server's run_id, not by their URLs' text. The same server as localhost and as
// 127.0.0.1, through two application pools, through Sentinel and directly, or through two
// seeds of one Redis Cluster is refused with ErrInvalidArgument naming both nodes; distinct
// servers, and a server restarted (a new run_id), still work; a user without DLOCK.RUNID is told
// what to allow, and INFO server is read instead where the module has no DLOCK.RUNID.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"dlock.dev/dlock/transport"
)

func sameServer(first, second string) string {
	return fmt.Sprintf("nodes %s and %s are the same server (run_id ", first, second)
}

// refusedAsOne checks err is the refusal naming first and second.
func refusedAsOne(t *testing.T, err error, first, second string) {
	t.Helper()
	if !errors.Is(err, dlock.ErrInvalidArgument) {
		t.Fatalf("not an invalid argument: %v", err)
	}
	if !strings.Contains(err.Error(), sameServer(first, second)) || !strings.HasSuffix(err.Error(), "): list each server once") {
		t.Fatalf("not the refusal of %s and %s: %v", first, second, err)
	}
}

func free(s *servers.Server) bool {
	reply, err := s.Do("DLOCK.STATUS", "r")
	return err == nil && reply == nil
}

func TestOneServerAsLocalhostAnd127001IsRefusedAndNothingIsLeftHeld(t *testing.T) {
	list := servers.Start(t, 2, servers.Flavour{})
	a, x := list[0], list[1]
	byIP, byName := fmt.Sprintf("redis://127.0.0.1:%d", a.Port), fmt.Sprintf("redis://localhost:%d", a.Port)
	ctx := deadline(t, 60*time.Second)
	// The repro: A twice and X, quorum 2. Each manager's first call is the one refused.
	for i := 0; i < 6; i++ {
		m := connect(t, []string{byIP, byName, x.URL()}, dlock.WithTimeout(500*time.Millisecond))
		var options []dlock.AcquireOption
		if i%2 == 1 {
			options = append(options, dlock.Wait(2*time.Second))
		}
		_, err := m.Acquire(ctx, "r", 10*time.Second, options...)
		refusedAsOne(t, err, byIP, byName)
		_, err = m.Acquire(ctx, "r", 10*time.Second) // at once from then on
		refusedAsOne(t, err, byIP, byName)
		m.Close()
		for end := time.Now().Add(5 * time.Second); !(free(a) && free(x)); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				onA, _ := redis.Strings(a.Do("DLOCK.STATUS", "r"))
				onX, _ := redis.Strings(x.Do("DLOCK.STATUS", "r"))
				t.Fatalf("call %d left the lock held: A %v, X %v", i, onA, onX)
			}
		}
	}
	// Named in the order given, whichever connected first.
	m := connect(t, []string{byName, byIP, x.URL()}, dlock.WithTimeout(500*time.Millisecond))
	defer m.Close()
	_, err := m.Acquire(ctx, "r", 10*time.Second)
	refusedAsOne(t, err, byName, byIP)
}

func TestTwoApplicationPoolsOfOneServerAreRefused(t *testing.T) {
	s := servers.Start(t, 1, servers.Flavour{})[0]
	pool := func() dlock.Pool {
		return transport.RedigoPool{Pool: &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port)) }}}
	}
	m := dlock.New(pool(), pool())
	defer m.Close()
	_, err := m.Acquire(deadline(t, 30*time.Second), "r", 10*time.Second)
	refusedAsOne(t, err, "pool 0", "pool 1")
}

func TestAURLGivenTwiceIsRefusedWhenTheManagerIsMade(t *testing.T) {
	_, err := dlock.Connect([]string{"redis://127.0.0.1:1", "redis://127.0.0.1:1"})
	if !errors.Is(err, dlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "node redis://127.0.0.1:1 is given twice: list each server once") {
		t.Fatalf("not refused as given twice: %v", err)
	}
}

func TestDistinctServersStillMakeAQuorumAndARestartIsNotADuplicate(t *testing.T) {
	list := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(list), dlock.WithTimeout(500*time.Millisecond))
	defer m.Close()
	ctx := deadline(t, 60*time.Second)
	lock, err := m.Acquire(ctx, "r", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release(ctx)
	list[0].Kill() // a new process, a new run_id, at the same address
	list[0].Spawn()
	if !list[0].Ready(10 * time.Second) {
		t.Fatal("not restarted")
	}
	lock, err = m.Acquire(ctx, "r", 10*time.Second, dlock.Wait(5*time.Second))
	if err != nil {
		t.Fatalf("the restarted server is the same node: %v", err)
	}
	_ = lock.Release(ctx)
}

// locker is a least-privilege ACL user on s: no command but those given.
func locker(t *testing.T, s *servers.Server, commands ...string) *dlock.Manager {
	t.Helper()
	rules := append([]interface{}{"SETUSER", "locker", "on", ">secret", "resetkeys", "~*", "-@all"}, toArgs(commands)...)
	if _, err := s.Do("ACL", rules...); err != nil {
		t.Fatal(err)
	}
	return connect(t, []string{s.URL()}, dlock.WithTimeout(500*time.Millisecond), dlock.WithCredentials("locker", "secret"))
}

func toArgs(words []string) []interface{} {
	args := make([]interface{}, len(words))
	for i, w := range words {
		args[i] = w
	}
	return args
}

func TestAUserWithoutDlockRunIDIsToldWhatToAllowAndNeedsNoInfo(t *testing.T) {
	s := servers.Start(t, 1, servers.Flavour{})[0]
	m := locker(t, s, "+dlock.acquire", "+dlock.release", "+dlock.fence")
	defer m.Close()
	ctx := deadline(t, 30*time.Second)
	_, err := m.Acquire(ctx, "r", 10*time.Second)
	if !errors.Is(err, dlock.ErrNoQuorum) || !strings.Contains(err.Error(), "cannot tell which server this is (DLOCK.RUNID refused: NOPERM") ||
		!strings.Contains(err.Error(), "allow the user DLOCK.RUNID (+dlock.runid") {
		t.Fatalf("not told to allow DLOCK.RUNID: %v", err)
	}
	if _, err := s.Do("ACL", "SETUSER", "locker", "+dlock.runid"); err != nil { // not INFO
		t.Fatal(err)
	}
	lock, err := m.Acquire(ctx, "r", 10*time.Second)
	if err != nil {
		t.Fatalf("with +dlock.runid: %v", err)
	}
	_ = lock.Release(ctx)
}

// A refusal waiting cannot cure ends the wait (conformance/README.md): the node is not connected
// to again within the call, so the ACL log holds a refusal or two, not one a retry pause for a
// minute (issue 48: ~50 a second). Redis folds like entries into one: their counts are summed.
func TestAUserWithoutDlockRunIDWaitingAMinuteIsRefusedAtOnce(t *testing.T) {
	s := servers.Start(t, 1, servers.Flavour{})[0]
	m := locker(t, s, "+dlock.acquire", "+dlock.release")
	defer m.Close()
	if _, err := s.Do("ACL", "LOG", "RESET"); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	_, err := m.Acquire(deadline(t, 90*time.Second), "r", 10*time.Second, dlock.Wait(time.Minute))
	if !errors.Is(err, dlock.ErrNoQuorum) || !strings.Contains(err.Error(), "DLOCK.RUNID refused: NOPERM") {
		t.Fatalf("not refused for DLOCK.RUNID: %v", err)
	}
	if took := time.Since(started); took > 3*time.Second {
		t.Fatalf("took %v", took)
	}
	entries, err := redis.Values(s.Do("ACL", "LOG"))
	if err != nil {
		t.Fatal(err)
	}
	refusals := int64(0)
	for _, entry := range entries {
		fields, _ := redis.Values(entry, nil) // key, value, key, value...
		for i := 0; i+1 < len(fields); i += 2 {
			if key, _ := redis.String(fields[i], nil); key == "count" {
				count, _ := redis.Int64(fields[i+1], nil)
				refusals += count
			}
		}
	}
	if refusals < 1 || refusals > 3 {
		t.Fatalf("%d refusals in the ACL log", refusals)
	}
}

// A server without DLOCK.RUNID (a module older than it; here none at all): INFO server is read
// instead, so one server is still found twice, and a user without INFO is told to allow it.
func TestWithoutDlockRunIDInfoServerTellsServersApart(t *testing.T) {
	old := servers.Start(t, 1, servers.Flavour{NoModule: true})[0]
	ctx := deadline(t, 30*time.Second)
	byIP, byName := fmt.Sprintf("redis://127.0.0.1:%d", old.Port), fmt.Sprintf("redis://localhost:%d", old.Port)
	m := connect(t, []string{byIP, byName}, dlock.WithTimeout(500*time.Millisecond))
	defer m.Close()
	_, err := m.Acquire(ctx, "r", 10*time.Second)
	if !errors.Is(err, dlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "nodes "+byIP+" and "+byName+" are the same server") {
		t.Fatalf("not refused as one server: %v", err)
	}
	user := locker(t, old, "+ping")
	defer user.Close()
	_, err = user.Acquire(ctx, "r", 10*time.Second)
	if !errors.Is(err, dlock.ErrNoQuorum) || !strings.Contains(err.Error(), "cannot tell which server this is (INFO server refused: NOPERM") ||
		!strings.Contains(err.Error(), "allow the user INFO (+info)") {
		t.Fatalf("not told to allow INFO: %v", err)
	}
}

func TestASentinelMasterGivenDirectlyTooIsRefused(t *testing.T) {
	d := servers.StartSentinels(t)
	group, direct := d.URL(), d.Data[0].URL()
	m := connect(t, []string{group, direct}, dlock.WithTimeout(time.Second), dlock.WithAckTimeout(2*time.Second),
		dlock.WithSentinelCredentials("", d.Password))
	defer m.Close()
	_, err := m.Acquire(deadline(t, 30*time.Second), "r", 10*time.Second)
	refusedAsOne(t, err, group, direct)
}

func TestTwoSeedsOfOneClusterAreRefused(t *testing.T) {
	c := servers.StartCluster(t)
	first, second := fmt.Sprintf("redis+cluster://127.0.0.1:%d", c.Nodes[0].Port), fmt.Sprintf("redis+cluster://127.0.0.1:%d", c.Nodes[1].Port)
	m := connect(t, []string{first, second}, dlock.WithTimeout(time.Second), dlock.WithReplicaAck(dlock.AckOff))
	defer m.Close()
	_, err := m.Acquire(deadline(t, 30*time.Second), "r", 10*time.Second)
	refusedAsOne(t, err, first, second)
}
