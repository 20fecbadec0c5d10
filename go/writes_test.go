package dlock_test

// The adversary's findings on the deferred commit (issue 50), against real nodes: a commit
// racing an extension (the lease's writes one at a time), a lost commit giving the hold back
// and ending validity, fmt never showing an uncommitted token, and an unwatched lock committing
// while validity is left.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

// slowFences is a TCP proxy in front of s whose replies to DLOCK.FENCE come delay late (the
// request goes through at once: the node commits, the client hears it late).
func slowFences(t *testing.T, s *servers.Server, delay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	target := strings.TrimPrefix(s.URL(), "redis://")
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relay(c, target, delay)
		}
	}()
	return "redis://" + l.Addr().String()
}

// relay copies c to target at once and target's replies back, those to a FENCE delay late.
func relay(c net.Conn, target string, delay time.Duration) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	var fencing int32
	go func() {
		defer up.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if bytes.Contains(bytes.ToUpper(buf[:n]), []byte("DLOCK.FENCE")) {
					atomic.StoreInt32(&fencing, 1)
				}
				if _, werr := up.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if atomic.SwapInt32(&fencing, 0) == 1 {
				time.Sleep(delay)
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// An Extend to a shorter TTL sent while the commit's FENCE ... PX (the longer TTL) is out: the
// nodes keep the TTL that arrived last, and the client must not believe a longer one.
func TestAnExtensionRacingTheCommitNeverLengthensTheValidityBeyondTheNodes(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	var urls []string
	for _, s := range nodes {
		urls = append(urls, slowFences(t, s, 400*time.Millisecond))
	}
	m := connect(t, urls, dlock.WithTimeout(2*time.Second))
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "race", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	read := make(chan error, 1)
	go func() {
		_, err := lock.Token(ctx)
		read <- err
	}()
	time.Sleep(100 * time.Millisecond) // the FENCEs are in, their replies on the way
	if err := lock.Extend(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	validity, asked := lock.Validity(), time.Now()
	for _, s := range nodes {
		st := status(t, s, "race")
		if st == nil {
			t.Fatalf("%s: free while the client believes validity %v", s.URL(), validity)
		}
		// The node's TTL is read later than the validity: the time between is added back (a
		// loaded machine takes tens of milliseconds over the three reads).
		held := time.Duration(st["ttl"].(int64))*time.Millisecond + time.Since(asked)
		if validity > held+20*time.Millisecond {
			t.Errorf("%s holds it %v, the client believes %v", s.URL(), held, validity)
		}
	}
}

// A commit that fails ends the validity and gives the hold back on the node that still had it.
func TestALostCommitEndsTheValidityAndGivesTheHoldBack(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "lost", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range nodes[:2] {
		if _, err := s.Do("DEL", "lost"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lock.Token(ctx); !errors.Is(err, dlock.ErrLockLost) {
		t.Fatalf("reading the token: %v, want ErrLockLost", err)
	}
	if v := lock.Validity(); v != 0 {
		t.Errorf("Validity() = %v after the commit failed, want 0", v)
	}
	servers.Eventually(t, 5*time.Second, "node 2 given the hold back", func() bool {
		return status(t, nodes[2], "lost") == nil
	})
}

// fmt never shows the token before its commit: %v, %+v, %#v, %s, %d all show "(uncommitted)";
// once committed, the token.
func TestPrintingALockShowsTheTokenOnlyOnceCommitted(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "shown", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	granted := strconv.FormatInt(status(t, nodes[0], "shown")["token"].(int64), 10)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d"} {
		if shown := fmt.Sprintf(verb, lock); strings.Contains(shown, granted) || !strings.Contains(shown, "(uncommitted)") {
			t.Errorf("%s before the commit: %s", verb, shown)
		}
	}
	token := tokenOf(t, lock)
	if shown := fmt.Sprintf("%+v", lock); !strings.Contains(shown, strconv.FormatUint(token, 10)) || strings.Contains(shown, "uncommitted") {
		t.Errorf("once committed: %s", shown)
	}
}

// Without a watchdog there is no renew deadline: a token read while validity is left commits.
func TestAnUnwatchedLockCommitsPastItsRenewDeadline(t *testing.T) {
	_, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "late", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	time.Sleep(lock.Validity() - 60*time.Millisecond) // past the renew deadline (100 ms before)
	token, err := lock.Token(ctx)
	if err != nil || token == 0 {
		t.Fatalf("read 60 ms before validity ends: %d, %v", token, err)
	}
	if lock.Err() != nil || lock.Validity() < 900*time.Millisecond {
		t.Errorf("after the commit: err %v, validity %v", lock.Err(), lock.Validity())
	}
}
