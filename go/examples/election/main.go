// Command election leads "reports" on the nodes of DLOCK_NODES (default redis://127.0.0.1:6379)
// with this instance's address, follows who leads, proclaims a new address and resigns.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"dlock.dev/dlock"
)

func main() {
	nodes := os.Getenv("DLOCK_NODES")
	if nodes == "" {
		nodes = "redis://127.0.0.1:6379"
	}
	locks, err := dlock.Connect(strings.Split(nodes, ","), dlock.WithTimeout(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	leading, err := locks.Campaign(ctx, "reports", "10.0.0.1:8080", 10*time.Second) // waits its turn
	if err != nil {
		log.Fatal(err)
	}
	changes, err := locks.Observe(ctx, "reports") // what every other instance can follow
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading with epoch", leading.Epoch()) // the fencing token of its writes
	show(changes)
	if err := leading.Proclaim(ctx, "10.0.0.2:8080"); err != nil { // same epoch, a new value
		log.Fatal(err)
	}
	show(changes)
	select {
	case <-leading.Context().Done(): // leadership lost: stop acting as leader at once
		log.Fatal(leading.Err())
	default:
	}
	if err := leading.Resign(ctx); err != nil { // the next candidate is elected at once
		log.Fatal(err)
	}
	show(changes)
}

// show prints the next change of leader.
func show(changes <-chan dlock.Change) {
	switch c := <-changes; {
	case c.Err != nil:
		log.Fatal(c.Err) // too few nodes answered to tell
	case c.Leader == nil:
		fmt.Println("nobody leads")
	default:
		fmt.Println("leader:", c.Leader.Value)
	}
}
