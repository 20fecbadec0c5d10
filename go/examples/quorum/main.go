// Command quorum runs a command under a lock taken on the nodes of DLOCK_NODES, as `dlock run`
// does: go run ./examples/quorum RESOURCE CMD [ARGS...] (the token in DLOCK_TOKEN).
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
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
	err = locks.WithLock(context.Background(), os.Args[1], 10*time.Second, func(ctx context.Context, lock *dlock.Lock) error {
		token, err := lock.Token(ctx) // committed on a quorum: never a token the nodes may not keep
		if err != nil {
			return err // ErrLockLost: the lock is lost
		}
		cmd := exec.CommandContext(ctx, os.Args[2], os.Args[3:]...) // killed if the lock is lost
		cmd.Env = append(os.Environ(), fmt.Sprintf("DLOCK_TOKEN=%d", token))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}, dlock.Wait(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
}
