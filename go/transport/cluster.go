package transport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// Cluster is a whole Redis Cluster as one quorum node (redis+cluster://host:port,
// rediss+cluster://), as the Rust and Node clients have it: the slot map is read with CLUSTER
// SLOTS (redisc's, from the seed or a known master), each lock goes to the master serving its
// key's slot (CRC16 of the key or its {hash tag}), MOVED updates the map and follows, ASK
// sends ASKING first on the target; a master found down makes the next call read the map
// again (a failover). A lock's write and its WAIT share one connection, and a queued wait gets
// a connection of its own on the right master: redisc's pooled connections, bound to the key.
type Cluster struct {
	name string
	c    *redisc.Cluster
	opts []redis.DialOption

	refreshing sync.Mutex // one CLUSTER SLOTS at a time
	mu         sync.Mutex
	mapped     bool      // the slot map was read and no master was found down since
	asked      *Identity // the servers of ASK targets, dialled directly
}

// maxRedirects bounds the MOVED / ASK a request follows.
const maxRedirects = 5

func newCluster(u URL, conf Config, identity *Identity) *Cluster {
	opts := dialOptions(conf, URL{TLS: u.TLS}, loginOf(conf, u))
	c := &redisc.Cluster{
		StartupNodes: []string{u.Addrs[0].String()},
		DialOptions:  opts,
		// One pool per master address, each connection's server claimed for this node.
		CreatePool: func(addr string, o ...redis.DialOption) (*redis.Pool, error) {
			master := identity.Another()
			return &redis.Pool{
				DialContext: func(ctx context.Context) (redis.Conn, error) {
					return dialIdentified(ctx, "tcp", addr, o, master)
				},
				MaxIdle:     idleConns,
				IdleTimeout: time.Minute,
			}, nil
		},
	}
	return &Cluster{name: u.Name, c: c, opts: opts, asked: identity.Another()}
}

// KeySlot is the Redis Cluster hash slot of key (of its hash tag, when it has one).
func KeySlot(key string) int { return redisc.Slot(key) }

// Name is the URL, password hidden.
func (c *Cluster) Name() string { return c.name }

// FailoverManaged is true: a master's replica takes over its slots.
func (c *Cluster) FailoverManaged() bool { return true }

// mapSlots reads the slot map if it is not known (first use, or a master found down).
func (c *Cluster) mapSlots() *Failure {
	c.refreshing.Lock()
	defer c.refreshing.Unlock()
	c.mu.Lock()
	mapped := c.mapped
	c.mu.Unlock()
	if mapped {
		return nil
	}
	if err := c.c.Refresh(); err != nil {
		why := strings.ReplaceAll(err.Error(), "\n", "; ")
		return &Failure{Node: c.name, Reason: "cannot read the slot map (" + why + ")"}
	}
	c.mu.Lock()
	c.mapped = true
	c.mu.Unlock()
	return nil
}

func (c *Cluster) unmap() {
	c.mu.Lock()
	c.mapped = false
	c.mu.Unlock()
}

// Call sends cmds on the master serving the first command's key, following redirects.
func (c *Cluster) Call(ctx context.Context, connect, whole time.Duration, cmds [][]string) ([]interface{}, *Failure) {
	if f := c.mapSlots(); f != nil {
		return nil, f
	}
	key := routingKey(cmds[0])
	start := time.Now()
	ask := ""
	for i := 0; i <= maxRedirects; i++ {
		replies, at, err := c.send(ctx, key, ask, start.Add(whole), cmds)
		if err != nil {
			return nil, c.failed(at, err, connect, whole)
		}
		redirect := redisc.ParseRedir(redisErr(replies[0]))
		if redirect == nil {
			return replies, nil
		}
		// MOVED: redisc noted the slot's new master (and reads the whole map again).
		ask = ""
		if redirect.Type == "ASK" {
			ask = redirect.Addr
		}
	}
	return nil, &Failure{Node: c.name, Reason: fmt.Sprintf("more than %d redirects for %q", maxRedirects, key)}
}

// routingKey is the key whose slot a command goes to: the first, after numkeys for a set's
// DLOCK.*ALL commands (whose keys share one slot: a set across slots goes one group at a time).
func routingKey(cmd []string) string {
	switch {
	case len(cmd) > 2 && strings.HasPrefix(strings.ToUpper(cmd[0]), "DLOCK.") && strings.HasSuffix(strings.ToUpper(cmd[0]), "ALL"):
		return cmd[2]
	case len(cmd) > 1:
		return cmd[1]
	}
	return ""
}

func redisErr(reply interface{}) error {
	if e, ok := reply.(Error); ok {
		return redis.Error(e)
	}
	return nil
}

// send: cmds on the master of key's slot, or with ASKING first on the ASK target ask.
func (c *Cluster) send(ctx context.Context, key, ask string, deadline time.Time, cmds [][]string) ([]interface{}, string, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if ask != "" {
		conn, err := dialIdentified(dctx, "tcp", ask, c.opts, c.asked)
		if err != nil {
			return nil, ask, err
		}
		defer conn.Close()
		replies, err := RedigoConn{C: conn}.Do(dctx, append([][]string{{"ASKING"}}, cmds...)...)
		if err != nil {
			return nil, ask, err
		}
		return replies[1:], ask, nil
	}
	conn := c.c.Get()
	defer conn.Close()
	if err := redisc.BindConn(conn, key); err != nil {
		return nil, "", err
	}
	replies, err := RedigoConn{C: conn}.Do(dctx, cmds...)
	return replies, "", err
}

// failed: a master that gave no answer may have failed over; the next call reads the map.
func (c *Cluster) failed(at string, err error, connect, whole time.Duration) *Failure {
	master := "master"
	if at != "" {
		master = "master " + at
	}
	if isTimeout(err) {
		return &Failure{Node: c.name, Reason: master + ": timed out after " + whole.String(), NoReply: true}
	}
	c.unmap()
	return &Failure{Node: c.name, Reason: master + ": " + clusterFailure(err, connect)}
}

// Close closes every master's connections.
func (c *Cluster) Close() {
	_ = c.c.Close()
}
