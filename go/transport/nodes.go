// Package transport is how the lock client reaches its nodes (client/src/transport/ and
// node/src/transport/ in the other clients): the seam to a Redis driver (Pool, Conn) and the
// quorum's nodes (this file), one server's connections (server.go), a Redis Cluster as one node
// (cluster.go), a Sentinel-managed master as one node (sentinel.go), node URLs (urls.go),
// replica acknowledgement (ack.go), TLS and logins (connect.go), a node's failure (errors.go)
// and in words (diagnosis.go), which server a node reaches (identity.go).
//
// The driver seam is Pool: anything that hands out a connection of its own per Get, like
// redsync's redis.Pool. This package ships and tests two drivers, redigo (redigo.go,
// RedigoPool) and go-redis v9 (goredis.go, GoRedisPool); any other (rueidis) fits by
// implementing Pool and Conn (docs/go/drivers.md).
package transport

import (
	"context"
	"time"
)

// Conn is one connection, the caller's alone until Close.
type Conn interface {
	// Do sends the commands in order on this connection and reads one reply to each, all
	// within ctx's deadline. A reply is an int64, a string (bulk or status), nil, a
	// []interface{} of replies, or an Error (an error reply). err is a connection that gave
	// no usable replies (cannot write, broken, timed out): the connection is then discarded
	// on Close.
	Do(ctx context.Context, cmds ...[]string) ([]interface{}, error)
	// Close gives the connection back (to its pool, or closes it if it failed).
	Close() error
}

// Pool hands out connections to one server; each Get is a connection of its own (a server-side
// wait blocks the connection it is sent on).
type Pool interface {
	Get(ctx context.Context) (Conn, error)
}

// Node is one member of the quorum: a server, a cluster or a sentinel-managed master.
type Node interface {
	// Name is how the node is named in errors (its URL, password hidden).
	Name() string
	// FailoverManaged tells a node whose data moves to a replica on failover (a cluster or a
	// sentinel-managed master): replica acknowledgement "auto" applies to it.
	FailoverManaged() bool
	// Call sends cmds (the first one's key picks a cluster's master) on one connection:
	// connected within connect, the replies within whole (counted from the start).
	Call(ctx context.Context, connect, whole time.Duration, cmds [][]string) ([]interface{}, *Failure)
	// Close closes its connections.
	Close()
}

// Open makes the node a parsed URL names, its servers claimed for identity's node
// (identity.go); nothing connects until the first call.
func Open(u URL, conf Config, identity *Identity) Node {
	switch u.Form {
	case FormCluster:
		return newCluster(u, conf, identity)
	case FormSentinel:
		return newSentinel(u, conf, identity)
	}
	return newURLServer(u, conf, identity)
}
