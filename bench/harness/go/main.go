// The Go contenders of `make bench` (built by bench/run.sh into target/go/bench-go): dlock's Go
// client ("dlock (go)") and redsync's algorithm ("redsync"), reimplemented here from its
// Lock/Unlock/Extend (SET NX PX on every node, then the delete and touch scripts) since redsync
// is not in Debian. Runs one scenario and prints one JSON line, as redlock.mjs does.
// Usage: bench-go dlock|redsync --nodes URL,URL --scenario latency|throughput|contention|extend|multi
// --n N --concurrency C --duration-ms D --prefix P [--ttl-ms T --k K --hold-ms H]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"dlock.dev/dlock"
)

// The lease (--ttl-ms), the set size and the critical section of the multi scenario (--k,
// --hold-ms).
var (
	ttl     = 10 * time.Second
	setSize = 2
	holdFor = time.Millisecond
)

// locker is one contender: take a lock (waiting or not), and a held lock's release and extend.
type locker interface {
	lock(ctx context.Context, name string, wait bool) (held, error)
}

type held interface {
	unlock() error
	extend() error
}

type measured struct {
	Latencies []float64 `json:"latencies_us,omitempty"`
	Ops       int       `json:"ops,omitempty"`
	Seconds   float64   `json:"seconds,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench-go dlock|redsync --nodes ... --scenario ...")
		os.Exit(2)
	}
	client := os.Args[1]
	flags := flag.NewFlagSet("bench-go", flag.ExitOnError)
	nodes := flags.String("nodes", "redis://127.0.0.1:6379", "node URLs")
	scenario := flags.String("scenario", "latency", "latency|throughput|contention|extend|multi")
	n := flags.Int("n", 200, "samples")
	concurrency := flags.Int("concurrency", 1, "tasks")
	duration := flags.Int("duration-ms", 2000, "ms")
	prefix := flags.String("prefix", "bench-go", "key prefix")
	ttlMs := flags.Int("ttl-ms", 10000, "lease, ms")
	k := flags.Int("k", 2, "resources per set (multi)")
	holdMs := flags.Int("hold-ms", 1, "critical section, ms (multi)")
	_ = flags.Parse(os.Args[2:])
	ttl, setSize, holdFor = time.Duration(*ttlMs)*time.Millisecond, *k, time.Duration(*holdMs)*time.Millisecond
	urls := strings.Split(*nodes, ",")
	var l locker
	var err error
	if client == "redsync" {
		l, err = newRedsync(urls)
	} else {
		l, err = newDlock(urls)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *scenario == "multi" {
		multi(l, *prefix, *concurrency, time.Duration(*duration)*time.Millisecond)
		return
	}
	run := scenarios[*scenario]
	if run == nil {
		run = latency
	}
	out, err := run(l, *prefix, *n, *concurrency, time.Duration(*duration)*time.Millisecond)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

var scenarios = map[string]func(locker, string, int, int, time.Duration) (measured, error){
	"latency": latency, "throughput": throughput, "contention": contention, "extend": extend,
}

func since(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e3 }

func latency(l locker, prefix string, n, _ int, _ time.Duration) (measured, error) {
	var m measured
	for i := 0; i < n; i++ {
		start := time.Now()
		h, err := l.lock(context.Background(), fmt.Sprintf("%s:%d", prefix, i), false)
		if err != nil {
			return m, err
		}
		if err := h.unlock(); err != nil {
			return m, err
		}
		m.Latencies = append(m.Latencies, since(start))
	}
	return m, nil
}

// tasks runs work on concurrency goroutines until the duration ends; the first error.
func tasks(concurrency int, d time.Duration, work func(task, i int) error) (float64, error) {
	start, end := time.Now(), time.Now().Add(d)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for t := 0; t < concurrency; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				if err := work(t, i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}(t)
	}
	wg.Wait()
	return time.Since(start).Seconds(), first
}

func throughput(l locker, prefix string, _, concurrency int, d time.Duration) (measured, error) {
	var mu sync.Mutex
	var m measured
	secs, err := tasks(concurrency, d, func(t, i int) error {
		h, err := l.lock(context.Background(), fmt.Sprintf("%s:%d:%d", prefix, t, i), false)
		if err == nil {
			err = h.unlock()
		}
		mu.Lock()
		m.Ops++
		mu.Unlock()
		return err
	})
	m.Seconds = secs
	return m, err
}

// contention: concurrency tasks on one resource, each holding it 1 ms.
func contention(l locker, prefix string, _, concurrency int, d time.Duration) (measured, error) {
	var mu sync.Mutex
	var m measured
	secs, err := tasks(concurrency, d, func(_, _ int) error {
		start := time.Now()
		h, err := l.lock(context.Background(), prefix+":contended", true)
		if err != nil {
			return err
		}
		wait := since(start)
		time.Sleep(time.Millisecond)
		err = h.unlock()
		mu.Lock()
		m.Latencies = append(m.Latencies, wait)
		m.Ops++
		mu.Unlock()
		return err
	})
	m.Seconds = secs
	return m, err
}

func extend(l locker, prefix string, n, _ int, _ time.Duration) (measured, error) {
	var m measured
	h, err := l.lock(context.Background(), prefix+":extended", false)
	if err != nil {
		return m, err
	}
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := h.extend(); err != nil {
			return m, err
		}
		m.Latencies = append(m.Latencies, since(start))
	}
	return m, h.unlock()
}

// dlock's Go client, with the 500 ms per-node timeout the other dlock contenders use (the
// benchmark measures speed, not failure detection).
type dlockLocker struct{ m *dlock.Manager }

type dlockHeld struct{ l *dlock.Lock }

func newDlock(urls []string) (locker, error) {
	m, err := dlock.Connect(urls, dlock.WithTimeout(500*time.Millisecond))
	return dlockLocker{m}, err
}

func (d dlockLocker) lock(ctx context.Context, name string, wait bool) (held, error) {
	var opts []dlock.AcquireOption
	if wait {
		opts = append(opts, dlock.Wait(time.Minute))
	}
	l, err := d.m.Acquire(ctx, name, ttl, opts...)
	return dlockHeld{l}, err
}

func (h dlockHeld) unlock() error { return h.l.Release(context.Background()) }
func (h dlockHeld) extend() error { return h.l.Extend(context.Background(), ttl) }
