package main

// The multi scenario (make bench-multi, docs/bench/multi.md): dining philosophers. Worker w of
// W needs resources w .. w+k-1 (mod W) and locks each in that order with the contender's
// waiting lock (redsync: retried SET NX PX, holding the earlier ones), holds them hold-ms,
// unlocks them, again until the run ends. Prints one JSON line, as redlock_multi.mjs does.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

type multiOut struct {
	Waits   []float64   `json:"waits_us"`
	Done    [][]float64 `json:"done_ms"`
	Seconds float64     `json:"seconds"`
	Errors  int         `json:"errors"`
	Error   string      `json:"error,omitempty"`
	Expired int         `json:"expired"`
}

type multiRun struct {
	mu    sync.Mutex
	out   multiOut
	start time.Time
	end   time.Time
}

func (r *multiRun) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.Errors++
	if r.out.Error == "" {
		r.out.Error = err.Error()
	}
}

// section logs a section asked at asked, held from held; one ending after the run is not counted.
func (r *multiRun) section(w int, asked, held time.Time, expired bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if expired {
		r.out.Expired++
	}
	if time.Now().After(r.end) {
		return
	}
	r.out.Waits = append(r.out.Waits, float64(held.Sub(asked).Nanoseconds())/1e3)
	r.out.Done[w] = append(r.out.Done[w], float64(time.Since(r.start).Nanoseconds())/1e6)
}

// take locks names in order; on an error the ones held are unlocked.
func take(ctx context.Context, l locker, names []string) ([]held, time.Time, error) {
	var hs []held
	var first time.Time
	for i, name := range names {
		h, err := l.lock(ctx, name, true)
		if err != nil {
			for _, h := range hs {
				_ = h.unlock()
			}
			return nil, first, err
		}
		if i == 0 {
			first = time.Now()
		}
		hs = append(hs, h)
	}
	return hs, first, nil
}

func (r *multiRun) worker(ctx context.Context, l locker, prefix string, w, workers int) {
	names := make([]string, setSize)
	for j := range names {
		names[j] = fmt.Sprintf("%s:r%d", prefix, (w+j)%workers)
	}
	for time.Now().Before(r.end) {
		asked := time.Now()
		hs, first, err := take(ctx, l, names)
		if err != nil {
			r.failed(err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		at := time.Now()
		time.Sleep(holdFor)
		expired := time.Since(first) >= ttl
		for _, h := range hs {
			if err := h.unlock(); err != nil {
				r.failed(err)
			}
		}
		r.section(w, asked, at, expired)
	}
}

// multi runs workers for d; workers still stuck 5 leases after the end are abandoned.
func multi(l locker, prefix string, workers int, d time.Duration) {
	r := &multiRun{start: time.Now(), end: time.Now().Add(d)}
	r.out.Done = make([][]float64, workers)
	for w := range r.out.Done {
		r.out.Done[w] = []float64{}
	}
	ctx, cancel := context.WithDeadline(context.Background(), r.end.Add(5*ttl))
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r.worker(ctx, l, prefix, w, workers)
		}(w)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.Seconds = d.Seconds()
	_ = json.NewEncoder(os.Stdout).Encode(r.out)
}
