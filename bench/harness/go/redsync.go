package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// redsync's algorithm (Redsync.NewMutex defaults: expiry 8 s here the bench's TTL, drift factor
// 0.01, timeout factor 0.05, a pause of 50-250 ms between tries; 32 tries, here as many as a
// minute allows, as long as the others wait): SET key value NX PX on every node
// at once, held with a quorum and validity left; otherwise the delete script on every node
// and another try. Its scripts, as redsync sends them (EVALSHA, EVAL when not loaded).
var (
	deleteScript = redis.NewScript(1, `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`)
	touchScript = redis.NewScript(1, `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`)
	errFailed = errors.New("redsync: failed to acquire lock")
)

type redsyncLocker struct{ pools []*redis.Pool }

type redsyncHeld struct {
	r           *redsyncLocker
	name, value string
}

func newRedsync(urls []string) (locker, error) {
	r := &redsyncLocker{}
	for _, raw := range urls {
		u, err := url.Parse(raw) // redis://host:port[/]
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("redsync: bad node URL %q", raw)
		}
		addr := u.Host
		r.pools = append(r.pools, &redis.Pool{MaxIdle: 64, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }})
	}
	return r, nil
}

func (r *redsyncLocker) quorum() int { return len(r.pools)/2 + 1 }

// onPools runs act on every pool at once: how many said yes.
func (r *redsyncLocker) onPools(act func(redis.Conn) (bool, error)) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	yes := 0
	for _, p := range r.pools {
		wg.Add(1)
		go func(p *redis.Pool) {
			defer wg.Done()
			c := p.Get()
			defer c.Close()
			if ok, err := act(c); ok && err == nil {
				mu.Lock()
				yes++
				mu.Unlock()
			}
		}(p)
	}
	wg.Wait()
	return yes
}

func genValue() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func delay() time.Duration {
	n, _ := rand.Int(rand.Reader, big.NewInt(200))
	return time.Duration(50+n.Int64()) * time.Millisecond
}

func (r *redsyncLocker) lock(ctx context.Context, name string, wait bool) (held, error) {
	value := genValue()
	drift := time.Duration(float64(ttl) * 0.01)
	giveUp := time.Now().Add(time.Minute) // as long as the dlock contenders wait
	if d, ok := ctx.Deadline(); ok && d.Before(giveUp) {
		giveUp = d
	}
	for i := 0; ; i++ {
		if i != 0 {
			if !wait || time.Now().After(giveUp) {
				return nil, errFailed
			}
			time.Sleep(delay())
		}
		start := time.Now()
		n := r.onPools(func(c redis.Conn) (bool, error) {
			reply, err := redis.String(c.Do("SET", name, value, "NX", "PX", int(ttl/time.Millisecond)))
			return reply == "OK", err
		})
		now := time.Now()
		until := now.Add(ttl - now.Sub(start) - drift)
		if n >= r.quorum() && now.Before(until) {
			return &redsyncHeld{r: r, name: name, value: value}, nil
		}
		r.onPools(func(c redis.Conn) (bool, error) { return release(c, name, value) })
	}
}

func release(c redis.Conn, name, value string) (bool, error) {
	status, err := redis.Int64(deleteScript.Do(c, name, value))
	return status == 1, err
}

func (h *redsyncHeld) unlock() error {
	if h.r.onPools(func(c redis.Conn) (bool, error) { return release(c, h.name, h.value) }) < h.r.quorum() {
		return errors.New("redsync: unlock failed")
	}
	return nil
}

func (h *redsyncHeld) extend() error {
	n := h.r.onPools(func(c redis.Conn) (bool, error) {
		status, err := redis.Int64(touchScript.Do(c, h.name, h.value, int(ttl/time.Millisecond)))
		return status != 0, err
	})
	if n < h.r.quorum() {
		return errors.New("redsync: failed to extend lock")
	}
	return nil
}
