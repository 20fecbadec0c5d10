// Package goredis is redsync's redis/goredis/v9 package for dlock: NewPool makes a dlock pool
// of a go-redis client, so a redsync program on go-redis changes its imports and nothing else:
//
//	redsync "dlock.dev/dlock"                         // was github.com/go-redsync/redsync/v4
//	"dlock.dev/dlock/redis/goredis/v9"                // was github.com/go-redsync/redsync/v4/redis/goredis/v9
//	goredislib "github.com/redis/go-redis/v9"
//
//	rs := redsync.New(goredis.NewPool(goredislib.NewClient(&goredislib.Options{...})))
package goredis

import (
	"context"

	"dlock.dev/dlock"
	"dlock.dev/dlock/transport"
	"github.com/redis/go-redis/v9"
)

// NewPool is a dlock pool over a go-redis client: a *redis.Client (NewClient, or
// NewFailoverClient for a Sentinel-managed master). dlock makes a client of its own from the
// client's options (RESP2, no retries, one connection per lock request: a queued wait blocks
// the connection it is sent on), so the application's client and its pool are left as they
// are; the manager's Close closes dlock's. A ClusterClient or a Ring, which hand out no
// connection of one server, makes every call fail: give one *redis.Client per node, or
// dlock.Connect a redis+cluster:// URL.
func NewPool(delegate redis.UniversalClient) dlock.Pool {
	c, ok := delegate.(*redis.Client)
	switch {
	case delegate == nil || (ok && c == nil):
		return nil // New refuses it as a nil pool
	case ok:
		return transport.NewGoRedisPool(c.Options())
	}
	return refused{}
}

// refused is the pool of a client that cannot give one server's connection.
type refused struct{}

func (refused) Get(context.Context) (dlock.Conn, error) {
	return nil, transport.Final("a go-redis ClusterClient or Ring has no connection of one server: " +
		"give goredis.NewPool one *redis.Client per node, or dlock.Connect a redis+cluster:// URL")
}
