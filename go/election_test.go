package dlock_test

// Leader election against real redis-server processes (docs/election.md, the twin of
// client/tests/election.rs): campaign, leader, proclaim, resign, observe, the lease-loss
// contract (a frozen node: lost at the renew deadline, before the lease ends; a refusal: at
// once; no extension after resign), bad input refused before any node is asked; on 1 and 5
// masters.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"github.com/gomodule/redigo/redis"
)

const lease = 1500 * time.Millisecond

// masters runs test on 1 and on 5 masters.
func masters(t *testing.T, test func(t *testing.T, nodes []*servers.Server)) {
	for _, n := range []int{1, 5} {
		n := n
		t.Run(fmt.Sprintf("%d masters", n), func(t *testing.T) {
			test(t, servers.Start(t, n, servers.Flavour{}))
		})
	}
}

func leaderNow(t *testing.T, ctx context.Context, m *dlock.Manager, name string) *dlock.Leader {
	t.Helper()
	leader, err := m.Leader(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return leader
}

// campaigning campaigns in the background: the leadership once elected (nil on an error).
func campaigning(t *testing.T, ctx context.Context, m *dlock.Manager, name, value string) <-chan *dlock.Leadership {
	next := make(chan *dlock.Leadership, 1)
	go func() {
		won, err := m.Campaign(ctx, name, value, lease)
		if err != nil {
			t.Error(err)
		}
		next <- won
	}()
	return next
}

func TestCampaignResignHandoff(t *testing.T) {
	masters(t, func(t *testing.T, nodes []*servers.Server) {
		ctx := deadline(t, 20*time.Second)
		a, b := connect(t, servers.URLs(nodes)), connect(t, servers.URLs(nodes))
		if l := leaderNow(t, ctx, a, "jobs"); l != nil {
			t.Fatalf("a leader before any campaign: %+v", l)
		}
		first, err := a.Campaign(ctx, "jobs", "10.0.0.1:80", lease)
		if err != nil {
			t.Fatal(err)
		}
		want := dlock.Leader{ID: first.ID(), Value: "10.0.0.1:80", Epoch: first.Epoch()}
		if l := leaderNow(t, ctx, b, "jobs"); l == nil || *l != want {
			t.Fatalf("leader %+v, want %+v", l, want)
		}
		next := campaigning(t, ctx, b, "jobs", "10.0.0.2:80")
		select {
		case <-next:
			t.Fatal("the second candidate was elected while the first leads")
		case <-time.After(300 * time.Millisecond):
		}
		resigned := time.Now()
		if err := first.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		second := <-next
		if second == nil {
			t.FailNow()
		}
		if took := time.Since(resigned); took > time.Second {
			t.Errorf("handed over in %v, want at once", took)
		}
		if second.Epoch() <= first.Epoch() {
			t.Errorf("epoch %d after %d: epochs rise with every leader", second.Epoch(), first.Epoch())
		}
		want = dlock.Leader{ID: second.ID(), Value: "10.0.0.2:80", Epoch: second.Epoch()}
		if l := leaderNow(t, ctx, a, "jobs"); l == nil || *l != want {
			t.Fatalf("leader %+v, want %+v", l, want)
		}
		if err := second.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if l := leaderNow(t, ctx, a, "jobs"); l != nil {
			t.Errorf("a leader after the last resign: %+v", l)
		}
	})
}

func TestProclaimKeepsTheEpoch(t *testing.T) {
	masters(t, func(t *testing.T, nodes []*servers.Server) {
		ctx := deadline(t, 20*time.Second)
		m := connect(t, servers.URLs(nodes))
		leading, err := m.Campaign(ctx, "svc", "v1", lease)
		if err != nil {
			t.Fatal(err)
		}
		if err := leading.Proclaim(ctx, "v2 with spaces"); err != nil || leading.Value() != "v2 with spaces" {
			t.Fatal(err, leading.Value())
		}
		want := dlock.Leader{ID: leading.ID(), Value: "v2 with spaces", Epoch: leading.Epoch()}
		if l := leaderNow(t, ctx, m, "svc"); l == nil || *l != want {
			t.Fatalf("leader %+v, want %+v", l, want)
		}
		time.Sleep(2 * lease) // the watchdog extends under the new owner
		if leading.Err() != nil || leading.Context().Err() != nil {
			t.Fatalf("lost after proclaim: %v", leading.Err())
		}
		if l := leaderNow(t, ctx, m, "svc"); l == nil || *l != want {
			t.Fatalf("leader %+v after extensions, want %+v", l, want)
		}
		if err := leading.Proclaim(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if l := leaderNow(t, ctx, m, "svc"); l == nil || l.Value != "" || l.Epoch != want.Epoch {
			t.Fatalf("leader %+v, want no value", l)
		}
		if err := leading.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if l := leaderNow(t, ctx, m, "svc"); l != nil {
			t.Errorf("a leader after resign: %+v", l)
		}
	})
}

// lostWithin waits for leadership to be lost: when, counted from since.
func lostWithin(t *testing.T, l *dlock.Leadership, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	select {
	case <-l.Context().Done():
		if !errors.Is(l.Err(), dlock.ErrLockLost) {
			t.Errorf("Err() = %v, want ErrLockLost", l.Err())
		}
		return time.Since(since)
	case <-time.After(within):
		t.Fatal("leadership never lost")
		return 0
	}
}

// A frozen node answers nothing: leadership is lost at its renew deadline (a tenth of the lease
// before validity ends), never after the lease could have ended on the node.
func TestAFrozenNodeLosesLeadershipAtTheRenewDeadline(t *testing.T) {
	nodes := servers.Start(t, 1, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(200*time.Millisecond))
	leading, err := m.Campaign(deadline(t, 10*time.Second), "frozen", "", lease)
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	nodes[0].Pause()
	at := lostWithin(t, leading, granted, 5*time.Second)
	nodes[0].Resume()
	if at <= lease/2 || at >= lease-lease/10+100*time.Millisecond {
		t.Errorf("lost at %v, want after %v and before the renew deadline (%v) + 100ms", at, lease/2, lease-lease/10)
	}
}

// A leader whose lock was force-released hears it from the node's refusal at its next
// extension (every lease / 3), not at the renew deadline.
func TestARefusedExtensionIsALossAtOnce(t *testing.T) {
	nodes := servers.Start(t, 1, servers.Flavour{})
	m := connect(t, servers.URLs(nodes))
	leading, err := m.Campaign(deadline(t, 10*time.Second), "taken", "", lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].Do("DLOCK.FORCERELEASE", "taken"); err != nil {
		t.Fatal(err)
	}
	if at := lostWithin(t, leading, time.Now(), 5*time.Second); at >= lease/2 {
		t.Errorf("lost %v after the force release, want at the next extension", at)
	}
}

func TestNoExtensionAfterResign(t *testing.T) {
	nodes := servers.Start(t, 1, servers.Flavour{})
	m := connect(t, servers.URLs(nodes))
	ctx := deadline(t, 10*time.Second)
	leading, err := m.Campaign(ctx, "quiet", "", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // an extension (every 100 ms) is about due
	if err := leading.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	info, err := redis.String(nodes[0].Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(info, "dlock.extend") {
		t.Errorf("an extension after resign: %s", info)
	}
}

func TestLeaderRefusesASharedLockAndNeedsAQuorum(t *testing.T) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(200*time.Millisecond))
	ctx := deadline(t, 10*time.Second)
	if _, err := m.Acquire(ctx, "readers", 10*time.Second, dlock.Shared()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Leader(ctx, "readers"); !errors.Is(err, dlock.ErrWrongKind) {
		t.Errorf("Leader of a shared lock: %v, want ErrWrongKind", err)
	}
	nodes[1].Kill()
	nodes[2].Kill()
	var e *dlock.Error
	if _, err := m.Leader(ctx, "jobs"); !errors.As(err, &e) || e.Kind != dlock.ErrNoQuorum || len(e.Failures) != 2 {
		t.Errorf("Leader with 1 of 3 nodes up: %v, want ErrNoQuorum naming 2 nodes", err)
	}
}

func TestElectionBadInputIsRefusedBeforeAnyNodeIsAsked(t *testing.T) {
	var gets int64
	m := dlock.New(countingPool{&gets})
	ctx := deadline(t, 5*time.Second)
	_, campaignEmpty := m.Campaign(ctx, "", "v", lease)
	_, campaignLong := m.Campaign(ctx, "e", strings.Repeat("v", dlock.MaxValueLen+1), lease)
	_, campaignTTL := m.Campaign(ctx, "e", "v", 0)
	_, leaderEmpty := m.Leader(ctx, "")
	_, observeEmpty := m.Observe(ctx, "")
	for i, err := range []error{campaignEmpty, campaignLong, campaignTTL, leaderEmpty, observeEmpty} {
		if !errors.Is(err, dlock.ErrInvalidArgument) {
			t.Errorf("case %d: %v, want ErrInvalidArgument", i, err)
		}
	}
	if n := atomic.LoadInt64(&gets); n != 0 {
		t.Errorf("%d connections asked for", n)
	}
}

func TestProclaimRefusesALongValueBeforeAnyNodeIsAsked(t *testing.T) {
	nodes := servers.Start(t, 1, servers.Flavour{})
	m := connect(t, servers.URLs(nodes))
	ctx := deadline(t, 10*time.Second)
	leading, err := m.Campaign(ctx, "long", "v", lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	if err := leading.Proclaim(ctx, strings.Repeat("v", dlock.MaxValueLen+1)); !errors.Is(err, dlock.ErrInvalidArgument) {
		t.Errorf("Proclaim of a long value: %v, want ErrInvalidArgument", err)
	}
	info, _ := redis.String(nodes[0].Do("INFO", "commandstats"))
	if strings.Contains(info, "dlock.proclaim") || leading.Value() != "v" {
		t.Errorf("a long value reached the node: %s", info)
	}
	_ = leading.Resign(ctx)
}
