// Package transport is how the lock client reaches its nodes (client/src/transport/ and
// node/src/transport/ in the other clients): the seam to a Redis driver (Pool, Conn), one
// server's connections (server.go), a Redis Cluster as one node (cluster.go), a
// Sentinel-managed master as one node (sentinel.go), node URLs (urls.go) and replica
// acknowledgement (ack.go).
//
// The driver seam is Pool: anything that hands out a connection of its own per Get, like
// redsync's redis.Pool. Redigo is the driver this package ships and tests (RedigoPool); any
// other driver (go-redis, rueidis) fits by implementing Pool and Conn (docs/go/drivers.md).
package transport

import (
	"context"
	"crypto/tls"
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

// Error is an error reply, as the server sent it ("WRONGKIND ...", "MOVED 3999 h:p").
type Error string

func (e Error) Error() string { return string(e) }

// Failure is why one node gave no usable answer: the node's name (its URL, password hidden)
// and the reason.
type Failure struct {
	Node   string
	Reason string
	// NoReply: the call got no reply within its time (as opposed to a refused connection, a
	// broken one or an error reply). For a server-side wait, also how the end of a wait that
	// the server answered late looks (the attempt tells the two apart).
	NoReply bool
	// Refused: a refusal met while a connection was set up that connecting again cannot cure
	// (conformance/README.md): RefusedSetup for credentials or permission refused (NOAUTH,
	// WRONGPASS, NOPERM), RefusedDatabase for a database the server does not have. Final for
	// the call that met it.
	Refused string
}

// What Failure.Refused says.
const (
	RefusedSetup    = "setup"
	RefusedDatabase = "database"
)

func (f Failure) Error() string { return f.Node + ": " + f.Reason }

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

// Config is how nodes made from URLs are reached beyond what their URLs say.
type Config struct {
	// Timeout bounds connecting (the handshake and login included) and writing.
	Timeout time.Duration
	// TLS for rediss:// nodes (nil: the system's roots, the URL's host name checked).
	TLS *tls.Config
	// Username and Password for nodes whose URL names no login.
	Username, Password string
	// SentinelUsername and SentinelPassword: the sentinels' own login.
	SentinelUsername, SentinelPassword string
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
