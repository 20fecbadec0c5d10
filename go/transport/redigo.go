package transport

import (
	"context"
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"
)

// RedigoPool is the Pool of a redigo *redis.Pool (or anything with its GetContext): the driver
// this package ships and tests.
type RedigoPool struct {
	Pool interface {
		GetContext(ctx context.Context) (redis.Conn, error)
	}
}

// Get takes a connection of the pool, dialled within ctx if none is idle.
func (p RedigoPool) Get(ctx context.Context) (Conn, error) {
	c, err := p.Pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	return RedigoConn{C: c}, nil
}

// RedigoConn is the Conn of one redigo connection.
type RedigoConn struct {
	C redis.Conn
}

// Do pipelines cmds and reads their replies; an error reply is an Error in its place.
func (c RedigoConn) Do(ctx context.Context, cmds ...[]string) ([]interface{}, error) {
	for _, cmd := range cmds {
		args := make([]interface{}, len(cmd)-1)
		for i, a := range cmd[1:] {
			args[i] = a
		}
		if err := c.C.Send(cmd[0], args...); err != nil {
			return nil, err
		}
	}
	if err := c.C.Flush(); err != nil {
		return nil, err
	}
	replies := make([]interface{}, len(cmds))
	for i := range cmds {
		r, err := redis.ReceiveWithTimeout(c.C, left(ctx))
		var reply redis.Error
		if errors.As(err, &reply) {
			replies[i] = Error(reply)
			continue
		}
		if err != nil {
			return nil, err
		}
		replies[i] = normalize(r)
	}
	return replies, nil
}

// Close gives the connection back to its pool (which drops it if it failed).
func (c RedigoConn) Close() error { return c.C.Close() }

// left is the time to ctx's deadline; at least a microsecond (zero would mean no timeout to
// redigo), an hour without a deadline.
func left(ctx context.Context) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return time.Hour
	}
	if d := time.Until(deadline); d > time.Microsecond {
		return d
	}
	return time.Microsecond
}

// normalize turns redigo's replies into the seam's: bulk strings as string, arrays recursively.
func normalize(r interface{}) interface{} {
	switch v := r.(type) {
	case []byte:
		return string(v)
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, e := range v {
			if err, ok := e.(redis.Error); ok {
				out[i] = Error(err)
				continue
			}
			out[i] = normalize(e)
		}
		return out
	}
	return r
}
