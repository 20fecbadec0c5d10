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
}
