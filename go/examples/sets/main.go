// Command sets moves money between two accounts under one lock on both and a reader's hold on
// the ledger, taken all or nothing on the nodes of DLOCK_NODES: go run ./examples/sets
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
	locks, err := dlock.Connect(strings.Split(os.Getenv("DLOCK_NODES"), ","), dlock.WithTimeout(500*time.Millisecond), dlock.FromEnv())
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	if err := transfer(context.Background(), locks); err != nil {
		log.Fatal(err)
	}
}

func transfer(ctx context.Context, locks *dlock.Manager) error {
	// Every resource or none, one token for the set; queued on all three at once meanwhile.
	set, err := locks.AcquireAll(ctx, []string{"accounts:1", "accounts:2", "ledger"}, 10*time.Second,
		dlock.Modes(dlock.Exclusive, dlock.Exclusive, dlock.SharedKind), dlock.Wait(time.Minute))
	if err != nil {
		return err
	}
	defer set.Release(ctx)
	token, err := set.Token(ctx) // committed on a quorum, on every resource of the set
	if err != nil {
		return err // ErrLockLost: the set is lost
	}
	fmt.Printf("moved 10 from accounts:1 to accounts:2 under token %d\n", token)
	return nil
}
