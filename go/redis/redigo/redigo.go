// Package redigo is redsync's redis/redigo package for dlock: NewPool makes a dlock pool of a
// redigo pool, so a redsync program changes its imports and nothing else:
//
//	redsync "dlock.dev/dlock"                      // was github.com/go-redsync/redsync/v4
//	"dlock.dev/dlock/redis/redigo"                 // was github.com/go-redsync/redsync/v4/redis/redigo
//	redigolib "github.com/gomodule/redigo/redis"
//
//	rs := redsync.New(redigo.NewPool(&redigolib.Pool{...}))
package redigo

import (
	"context"

	"dlock.dev/dlock"
	"dlock.dev/dlock/transport"
	"github.com/gomodule/redigo/redis"
)

// Pool is what redsync's redigo.NewPool takes: a *redis.Pool, or anything like it.
type Pool interface {
	Get() redis.Conn
	GetContext(ctx context.Context) (redis.Conn, error)
}

// NewPool is a dlock pool over a redigo pool.
func NewPool(delegate Pool) dlock.Pool {
	return transport.RedigoPool{Pool: delegate}
}
