// Package dlock takes distributed locks with quorum fencing tokens on N Redis masters running
// the dlock module: the protocol of the project's Rust, Python and Node clients (one engine,
// one file map, the same conformance table), in Go.
//
// Two entry points share one engine. Connect takes node URLs and options:
//
//	locks, err := dlock.Connect([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"})
//	lock, err := locks.Acquire(ctx, "orders:42", 10*time.Second, dlock.Wait(5*time.Second))
//	defer lock.Release(ctx)
//	token, err := lock.Token(ctx) // committed on a quorum (ErrLockLost when it cannot be)
//	storage.Write(token, data)    // the resource refuses lower tokens
//
// and New is redsync's, over one pool per node:
//
//	rs := dlock.New(redigo.NewPool(pool1), redigo.NewPool(pool2), redigo.NewPool(pool3))
//	mutex := rs.NewMutex("orders:42", dlock.WithExpiry(10*time.Second))
//	if err := mutex.Lock(); err != nil { ... }
//	defer mutex.Unlock()
//
// Waiting queues on the nodes in ticket order (no polling); the largest token a quorum granted
// is committed on it (FENCE) before the lock is held (one attempt without a wait commits it
// when Lock.Token is first called); Shared and Limit take a reader's hold or a
// semaphore's permit with their quorums; Lock.Context is done at the lock's renew deadline (while
// watched; else when its validity ends), and
// WithLock keeps the lock extended while work runs. Campaign, Leader and Observe elect and
// follow a leader on the same locks (docs/election.md). Errors are *Error, told apart with
// errors.Is (ErrContended, ErrNoQuorum, ErrLockLost, ...). docs/go.md in the repository has the
// rest.
package dlock

// Version is the dlock release this package belongs to: the one version of the module and every
// client (MODULE LIST shows it as major*10000+minor*100+patch). scripts/version.sh sets it.
const Version = "0.5.0"
