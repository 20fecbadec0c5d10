package transport

// A node's failure, as the transport reports it (client/src/errors.rs's NodeFailure; the dlock
// package names it NodeFailure): here because the transport cannot import the package above it.

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
