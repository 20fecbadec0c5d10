package transport

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// Why a node could not be used, in the words every dlock client uses (conformance/errors.json;
// client/src/transport/diagnosis.rs, node/src/transport/diagnosis.ts): what failed, then what
// to do. The Failure puts the node's name in front. No text here carries a credential: a
// server's own refusal of a login is replaced, never quoted.

const (
	// Login is how the Go client is given a user and password.
	Login = "user:password@ in the URL, or dlock.WithCredentials(user, password)"
	// Refused: nothing listens on the port.
	Refused = "connection refused: is the server running, and is the port right?"
	// NoSocket: no unix socket at the path.
	NoSocket = "no such socket: is the server running, and is the path right?"
	// PlainToTLS: a plain connection a TLS port reset (or closed) before it answered.
	PlainToTLS = "connection reset during the handshake: is it a TLS port? then use rediss://"
	// NoAuth: the server wants a login and got none.
	NoAuth = "authentication required (NOAUTH): give a user and password (" + Login + ")"
	// WrongPass: the server refused the login given.
	WrongPass = "authentication failed (wrong user or password): give the right user and password (" + Login + ")"
)

// cannotConnect says why a connection could not be made (dialled, TLS, AUTH, SELECT), within
// the time it had.
func cannotConnect(err error, tls bool, within time.Duration) string {
	if why, ok := explain(err, tls, within); ok {
		return why
	}
	return "cannot connect: " + describe(err, within)
}

// broken says why a connection gave no usable reply; fresh: one dialled for this call, which
// no reply has come on yet (a plain connection a TLS port closes breaks so).
func broken(err error, tls, fresh bool) string {
	if fresh && !tls && dropped(err) {
		return PlainToTLS
	}
	if why, ok := refusedLogin(err.Error()); ok {
		return why
	}
	return "connection broken: " + err.Error()
}

// explain is what to do about a failure a user can fix, if err is one.
func explain(err error, tls bool, within time.Duration) (string, bool) {
	var refusal Refusal // one server reached by two nodes, or one that cannot say which it is
	if errors.As(err, &refusal) {
		return string(refusal), true
	}
	var final Final
	if errors.As(err, &final) {
		return string(final), true
	}
	if why, ok := refusedLogin(err.Error()); ok {
		return why, true
	}
	var op *net.OpError
	dialling := errors.As(err, &op) && op.Op == "dial"
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused, true
	case errors.Is(err, syscall.ENOENT):
		return NoSocket, true
	case !tls && dropped(err):
		return PlainToTLS, true
	case tls && isTimeout(err) && !dialling:
		return fmt.Sprintf("no TLS handshake within %v: a port without TLS? then use redis:// "+
			"(or the server is paused or overloaded)", within), true
	case tls && !dialling:
		return tlsFailure(err)
	}
	return "", false
}

// clusterFailure says why a cluster's master gave no answer: a refused connection or login as
// everywhere, anything else as it came (a broken connection is likely a failover).
func clusterFailure(err error, within time.Duration) string {
	var refusal Refusal
	if errors.As(err, &refusal) {
		return string(refusal)
	}
	if why, ok := refusedLogin(err.Error()); ok {
		return why
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Refused
	}
	return describe(err, within)
}

// ExplainReply is an error reply as the server wrote it ("TRYAGAIN ..."), but for a refused
// login, which says what to do instead.
func ExplainReply(reply Error) string {
	if why, ok := refusedLogin(string(reply)); ok {
		return why
	}
	return string(reply)
}

// refusedLogin: a missing or a wrong password (Redis 6's codes, and the older servers' ERR).
func refusedLogin(said string) (string, bool) {
	switch {
	case strings.HasPrefix(said, "NOAUTH"):
		return NoAuth, true
	case strings.HasPrefix(said, "WRONGPASS"), strings.HasPrefix(said, "ERR invalid password"),
		strings.HasPrefix(said, "ERR AUTH <password> called without any password"):
		return WrongPass, true
	}
	return "", false
}

// noSuchDatabase is how a server refuses a database it does not have (Redis, Valkey).
const noSuchDatabase = "DB index is out of range"

// connectFailure is why connecting to database db failed (err), said as cannotConnect says it,
// with Refused set for a refusal connecting again cannot cure: credentials or permission
// refused, a database the server does not have (conformance/README.md).
func connectFailure(node string, err error, tls bool, within time.Duration, db int) *Failure {
	var final Final
	said, reply := replyOf(err)
	switch {
	case reply && strings.Contains(said, noSuchDatabase):
		reason := fmt.Sprintf("database %d refused by the server (%s)", db, said)
		return &Failure{Node: node, Reason: reason, Refused: RefusedDatabase}
	case errors.As(err, &final), reply && strings.HasPrefix(said, "NOPERM"):
		return &Failure{Node: node, Reason: cannotConnect(err, tls, within), Refused: RefusedSetup}
	}
	if _, login := refusedLogin(said); reply && login {
		return &Failure{Node: node, Reason: cannotConnect(err, tls, within), Refused: RefusedSetup}
	}
	return &Failure{Node: node, Reason: cannotConnect(err, tls, within)}
}

// dropped: the other end closed or reset the connection.
func dropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// tlsFailure: a certificate refused, by either side.
func tlsFailure(err error) (string, bool) {
	text := err.Error()
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.As(err, &authority):
		return "TLS: " + text + ": the server's certificate is not signed by a CA given " +
			"(dlock.WithTLSFiles; without one, the system's)", true
	case errors.As(err, &host):
		return "TLS: " + text + ": the server's certificate is not for the host in the URL", true
	case strings.Contains(text, "certificate required"):
		return "TLS: " + text + ": the server wants a client certificate: give a certificate " +
			"and its key (dlock.WithTLSFiles)", true
	case strings.Contains(text, "tls:") || strings.Contains(text, "x509:"):
		return "TLS: " + text + ": check the CA, the client certificate and the host name", true
	}
	return "", false
}
