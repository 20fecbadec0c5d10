// Command redsync is redsync's README program with its two redsync imports changed to dlock's
// (the import lines are all that differ): it locks "my-global-mutex" on the node of
// DLOCK_NODE (default 127.0.0.1:6379) and prints the fencing token.
package main

import (
	"fmt"
	"os"

	redsync "dlock.dev/dlock"      // was "github.com/go-redsync/redsync/v4"
	"dlock.dev/dlock/redis/redigo" // was "github.com/go-redsync/redsync/v4/redis/redigo"
	redigolib "github.com/gomodule/redigo/redis"
)

func main() {
	addr := os.Getenv("DLOCK_NODE")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	// Create a pool with redigo which is the pool redsync will use while communicating with Redis.
	pool := redigo.NewPool(&redigolib.Pool{
		Dial: func() (redigolib.Conn, error) { return redigolib.Dial("tcp", addr) },
	})

	// Create an instance of redsync to be used to obtain a mutual exclusion lock.
	rs := redsync.New(pool)

	// Obtain a new mutex by using the same name for all instances wanting the same lock.
	mutexname := "my-global-mutex"
	mutex := rs.NewMutex(mutexname)

	// Obtain a lock for our given mutex. After this is successful, no one else can obtain the
	// same lock (the same mutex name) until we unlock it.
	if err := mutex.Lock(); err != nil {
		panic(err)
	}

	// Do your work that requires the lock.
	token, err := mutex.Token() // the fencing token, committed on a quorum
	if err != nil {
		panic(err)
	}
	fmt.Println("token", token)

	// Release the lock so other processes or threads can obtain a lock.
	if ok, err := mutex.Unlock(); !ok || err != nil {
		panic("unlock failed")
	}
}
