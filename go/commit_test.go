package dlock_test

// The commit a hold taken without waiting owes, against three real nodes: no FENCE until the
// token is read, one FENCE round however many read it, the token the nodes store, a commit that
// fails losing the lock, Guarded and an election paying it first, a reader's done ctx leaving
// the shared commit going, and the queued lock committing while it acquires as before.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
	"github.com/gomodule/redigo/redis"
)

// tokenOf is lock's token, read as an application reads it (a commit owed is paid here); a
// failure fails the test (t.Error: safe from any goroutine).
func tokenOf(t testing.TB, lock *dlock.Lock) uint64 {
	t.Helper()
	token, err := lock.Token(context.Background())
	if err != nil {
		t.Errorf("reading the token: %v", err)
	}
	return token
}

var fenceCalls = regexp.MustCompile(`cmdstat_dlock\.fence:calls=(\d+)`)

// fences is how many DLOCK.FENCE the servers were sent, all told (INFO commandstats).
func fences(t *testing.T, nodes []*servers.Server) int {
	t.Helper()
	total := 0
	for _, s := range nodes {
		info, err := redis.String(s.Do("INFO", "commandstats"))
		if err != nil {
			t.Fatal(err)
		}
		if m := fenceCalls.FindStringSubmatch(info); m != nil {
			n, _ := strconv.Atoi(m[1])
			total += n
		}
	}
	return total
}

// settled waits until the servers were sent want FENCEs (the round's last replies may come
// after its outcome), then checks that no more come.
func settled(t *testing.T, nodes []*servers.Server, want int) {
	t.Helper()
	servers.Eventually(t, 5*time.Second, fmt.Sprintf("%d FENCE calls", want), func() bool { return fences(t, nodes) >= want })
	time.Sleep(50 * time.Millisecond)
	if got := fences(t, nodes); got != want {
		t.Errorf("%d FENCE calls, want %d", got, want)
	}
}

func threeNodes(t *testing.T, options ...dlock.Option) ([]*servers.Server, *dlock.Manager) {
	nodes := servers.Start(t, 3, servers.Flavour{})
	return nodes, connect(t, servers.URLs(nodes), append([]dlock.Option{dlock.WithTimeout(500 * time.Millisecond)}, options...)...)
}

func TestATryLockSendsNoFenceUntilItsTokenIsRead(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	unread, err := m.Acquire(ctx, "owed", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := unread.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fences(t, nodes); got != 0 {
		t.Fatalf("%d FENCE calls for a hold whose token was never read", got)
	}
	lock, err := m.Acquire(ctx, "owed", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	if got := fences(t, nodes); got != 0 {
		t.Fatalf("%d FENCE calls before the token is read", got)
	}
	token := tokenOf(t, lock)
	if again := tokenOf(t, lock); again != token {
		t.Errorf("read again: %d, then %d", token, again)
	}
	settled(t, nodes, 3) // one round: one FENCE per node that granted, not two
	committed := 0
	for _, s := range nodes {
		if st := status(t, s, "owed"); st["owner"] == lock.Owner() && uint64(st["token"].(int64)) == token {
			committed++
		}
	}
	if committed < 2 {
		t.Errorf("token %d stored on %d nodes, want a majority", token, committed)
	}
	if lock.Validity() < 9*time.Second || lock.Err() != nil {
		t.Errorf("after the commit: validity %v, err %v", lock.Validity(), lock.Err())
	}
}

func TestConcurrentReadersShareOneCommit(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "readers", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	const readers = 8
	tokens := make([]uint64, readers)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tokens[i] = tokenOf(t, lock)
		}(i)
	}
	wg.Wait()
	for _, tok := range tokens {
		if tok == 0 || tok != tokens[0] {
			t.Fatalf("readers read %v", tokens)
		}
	}
	settled(t, nodes, 3)
}

func TestACommitThatFailsLosesTheLock(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "doomed", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range nodes[:2] {
		if _, err := s.Do("DEL", "doomed"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lock.Token(ctx); !errors.Is(err, dlock.ErrLockLost) {
		t.Fatalf("reading the token: %v, want ErrLockLost", err)
	}
	if lock.Context().Err() == nil || !errors.Is(lock.Err(), dlock.ErrLockLost) {
		t.Errorf("the lock is not lost: context %v, err %v", lock.Context().Err(), lock.Err())
	}
	settled(t, nodes, 3)
	if _, err := lock.Token(ctx); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("read again: %v, want ErrLockLost", err)
	}
	if got := fences(t, nodes); got != 3 {
		t.Errorf("%d FENCE calls after the second read, want the first round's 3", got)
	}
	_ = lock.Release(ctx)
}

func TestATokenReadAfterReleaseOrPastValiditySendsNoFence(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	released, err := m.Acquire(ctx, "gone", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = released.Release(ctx)
	if _, err := released.Token(ctx); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("released: %v, want ErrLockLost", err)
	}
	expired, err := m.Acquire(ctx, "expired", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := expired.Token(ctx); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("past its validity: %v, want ErrLockLost", err)
	}
	if expired.Context().Err() == nil {
		t.Error("past its validity, the lock is not lost")
	}
	if got := fences(t, nodes); got != 0 {
		t.Errorf("%d FENCE calls", got)
	}
}

// A reader whose ctx ends while the commit waits on a frozen node gets ctx's error; the commit
// goes on, and the next reader gets its outcome.
func TestADoneReaderLeavesTheSharedCommitGoing(t *testing.T) {
	nodes, m := threeNodes(t, dlock.WithTimeout(3*time.Second))
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "slow", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	if _, err := nodes[1].Do("DEL", "slow"); err != nil { // node 0 must commit too
		t.Fatal(err)
	}
	nodes[0].Pause()
	resumed := false
	defer func() {
		if !resumed {
			nodes[0].Resume()
		}
	}()
	hurried, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := lock.Token(hurried); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reader out of time: %v, want its ctx's error", err)
	}
	nodes[0].Resume()
	resumed = true
	token, err := lock.Token(ctx)
	if err != nil || token == 0 {
		t.Fatalf("the next reader: %d, %v", token, err)
	}
	if st := status(t, nodes[0], "slow"); uint64(st["token"].(int64)) != token {
		t.Errorf("node 0 holds %v, want token %d", st, token)
	}
	settled(t, nodes, 3) // the first reader's round, not a second one
}

func TestGuardedOnAnUncommittedHoldCommitsFirst(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	data, err := redis.DialURL(nodes[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	lock, err := m.Acquire(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	if _, err := lock.Guarded(data, "job:gate", "SET", "job:out", "mine"); err != nil {
		t.Fatal(err)
	}
	settled(t, nodes, 3)
	token := tokenOf(t, lock)
	if got, _ := redis.String(data.Do("GET", "job:out")); got != "mine" {
		t.Errorf("job:out = %q", got)
	}
	// The gate stands at the committed token: the same token passes, one below is refused.
	if _, err := data.Do("DLOCK.GUARD", "job:gate", token-1, "SET", "job:out", "older"); err == nil {
		t.Errorf("the gate took token %d below the committed %d", token-1, token)
	}
	if _, err := data.Do("DLOCK.GUARD", "job:gate", token, "SET", "job:out", "same"); err != nil {
		t.Errorf("the committed token at its gate: %v", err)
	}
	settled(t, nodes, 3)
}

func TestAQueuedLockCommitsWhileAcquiring(t *testing.T) {
	nodes, m := threeNodes(t)
	ctx := deadline(t, 30*time.Second)
	lock, err := m.Acquire(ctx, "queued", 10*time.Second, dlock.Wait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	time.Sleep(50 * time.Millisecond) // a commit's last replies may come after it is held
	sent := fences(t, nodes)
	if sent < 2 {
		t.Fatalf("%d FENCE calls while acquiring, want a quorum's", sent)
	}
	_ = tokenOf(t, lock)
	settled(t, nodes, sent) // reading sends nothing more
}

func TestARetryCampaignAndATryLockMutexCommitOnRead(t *testing.T) {
	nodes, m := threeNodes(t, dlock.WithWaitMode(dlock.Retry))
	ctx := deadline(t, 30*time.Second)
	leading, err := m.Campaign(ctx, "lead", "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, nodes, 3) // the epoch committed before Campaign returned
	for _, s := range nodes {
		if st := status(t, s, "lead"); uint64(st["token"].(int64)) != leading.Epoch() {
			t.Errorf("%s: %v, want epoch %d", s.URL(), st, leading.Epoch())
		}
	}
	_ = leading.Resign(ctx)
	mutex := m.NewMutex("mutex")
	if err := mutex.TryLock(); err != nil {
		t.Fatal(err)
	}
	settled(t, nodes, 3)
	token, err := mutex.Token()
	if err != nil || token == 0 {
		t.Fatalf("the mutex's token: %d, %v", token, err)
	}
	settled(t, nodes, 6)
	if ok, err := mutex.Unlock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := mutex.Token(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("not held: %v, want ErrLockLost", err)
	}
}
