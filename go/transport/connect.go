package transport

// How every node is reached beyond its URL: TLS and the logins (client/src/connect.rs), what
// rediss:// nodes trust and present, the nodes' ACL user and password, the sentinels' own, and
// the connect timeout.

import (
	"crypto/tls"
	"time"
)

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
	// Driver: what servers and sentinel-managed masters are reached through ("": Redigo).
	Driver Driver
}

// Driver is a Redis driver the nodes made from URLs connect through. Both fit the same seam
// (Pool, Conn); a Redis Cluster node and the questions to sentinels stay on redigo (redisc's
// slot map and pools), whichever is chosen: go-redis's ClusterClient routes and retries on its
// own and hands out no connection per call.
type Driver string

// The drivers: redigo (redigo.go), go-redis v9 (goredis.go).
const (
	Redigo  Driver = "redigo"
	GoRedis Driver = "goredis"
)
