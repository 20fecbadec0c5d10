// Command goredis is an application on go-redis taking dlock's locks through it, both ways: its
// own clients (one *redis.Client per node of DLOCK_NODES) made into dlock pools, redsync's
// shape, and node URLs connected through go-redis with WithDriver. The second is refused the
// lock the first holds.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"dlock.dev/dlock"
	goredis "dlock.dev/dlock/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	urls := strings.Split(os.Getenv("DLOCK_NODES"), ",")
	var pools []dlock.Pool
	for _, url := range urls {
		opt, err := goredislib.ParseURL(url) // the application's own clients
		if err != nil {
			log.Fatal(err)
		}
		client := goredislib.NewClient(opt)
		defer client.Close()
		pools = append(pools, goredis.NewPool(client))
	}
	locks, err := dlock.NewManager(pools, dlock.WithTimeout(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	lock, err := locks.Acquire(ctx, "report", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	token, err := lock.Token(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("token", token)

	// The same nodes by URL, through go-redis too: the lock is held.
	others, err := dlock.Connect(urls, dlock.WithDriver(dlock.GoRedis), dlock.WithTimeout(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer others.Close()
	if _, err := others.Acquire(ctx, "report", 10*time.Second); !errors.Is(err, dlock.ErrContended) {
		log.Fatalf("not contended: %v", err)
	}
	fmt.Println("contended while held")
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}
}
