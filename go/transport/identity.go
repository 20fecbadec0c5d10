package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
)

// Which redis-server a connection reached, so that one server never counts twice in a quorum
// (client/src/transport/identity.rs, python/src/dlock/_pure/identity.py,
// node/src/transport/identity.ts).
//
// A URL's text does not say which server it reaches: localhost and 127.0.0.1, a sentinel
// group's master and the same master given directly, two seeds of one Redis Cluster all name
// one process. Counted as two nodes, that one process made a quorum alone (issue 48). So every
// new connection, before its first request, reads the server's run_id (DLOCK.RUNID, or INFO
// server from a module older than that command: one per process, the same whatever address
// reached it, new after a restart) and claims it for its quorum node in the manager's Registry. A server another node already claimed is refused: the
// connection is closed, the node's calls fail from then on without a request sent, and every
// acquisition fails with ErrInvalidArgument naming both nodes. A server that cannot say its
// run_id (an ACL user without DLOCK.RUNID, or without INFO on an older module) is refused too,
// with what to allow.
//
// A claim lasts as long as the manager: it moves only when its place (a URL's server, a
// sentinel group's master, a cluster master's address) shows another run_id (a restart, or the
// group's new master after a failover), and the old one is let go then. A server a node no
// longer uses (a master gone from a cluster's slot map) stays claimed, as in every client
// (docs/connecting.md).

// Registry is which quorum node reaches each server, for one manager.
type Registry struct {
	names []string

	mu      sync.Mutex
	owners  map[string]owner // a server's run_id -> the node reaching it
	refusal string           // the first duplicate found, in words
	refused map[int]string   // nodes reaching another node's server
	met     []bool
}

// owner is the node reaching a server, and how many of that node's servers last saw it (a
// cluster's seed and a master may be one process under two addresses).
type owner struct{ node, servers int }

// NewRegistry is the registry of the nodes named names, in order.
func NewRegistry(names []string) *Registry {
	return &Registry{names: names, owners: map[string]owner{}, refused: map[int]string{}, met: make([]bool, len(names))}
}

// Refusal is why every acquisition is refused: two nodes reach one server ("" while none do).
func (r *Registry) Refusal() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refusal
}

// Refused is why node is refused, if it reaches a server another node reaches.
func (r *Registry) Refused(node int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused[node]
}

// Met: node was met: a connection of it identified its server (or was refused), or a call of
// it ended (a node down counts: nothing to identify until it is back).
func (r *Registry) Met(node int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if node >= 0 && node < len(r.met) {
		r.met[node] = true
	}
}

// AllMet: every node was met once. A manager's first lock may count a node's grant while
// another node that reaches the same server is still connecting: it waits for this first, so
// that first call is the one refused.
func (r *Registry) AllMet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, met := range r.met {
		if !met {
			return false
		}
	}
	return true
}

// claim: node sees runID where it saw previous (a restart, another master after a failover):
// the new one claimed and the old let go; or why not (another node holds it).
func (r *Registry) claim(node int, runID, previous string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, known := r.owners[runID]
	if known && o.node != node {
		why := r.duplicate(o.node, node, runID)
		if r.refusal == "" {
			r.refusal = why
		}
		r.refused[node] = why
		return why
	}
	r.owners[runID] = owner{node: node, servers: o.servers + 1}
	if previous != "" {
		if p, ok := r.owners[previous]; ok && p.servers > 1 {
			r.owners[previous] = owner{node: p.node, servers: p.servers - 1}
		} else {
			delete(r.owners, previous)
		}
	}
	return ""
}

// duplicate is the refusal's words: both nodes in the order given, whichever connected first.
func (r *Registry) duplicate(a, b int, runID string) string {
	if a > b {
		a, b = b, a
	}
	return fmt.Sprintf("nodes %s and %s are the same server (run_id %s): list each server once", r.names[a], r.names[b], runID)
}

// Identity is one place in the registry (a plain node's server, a cluster master's address, a
// sentinel group's master whichever server it is): the run_id its connections last showed. A
// sentinel group's masters share their node's one Identity; Another makes a new place. nil
// checks nothing.
type Identity struct {
	registry *Registry
	node     int

	mu   sync.Mutex
	seen string
}

// NewIdentity is node's identity in registry.
func NewIdentity(registry *Registry, node int) *Identity {
	return &Identity{registry: registry, node: node}
}

// Another is the same node's identity for another of its servers (a cluster's other masters).
func (i *Identity) Another() *Identity {
	if i == nil {
		return nil
	}
	return NewIdentity(i.registry, i.node)
}

// Refusal is a connection refused as one that must not count (said as it is, not as a
// connection failure).
type Refusal string

func (r Refusal) Error() string { return string(r) }

// Final is a refusal of a connection's setup that connecting again cannot cure (permission
// refused), said as it is.
type Final string

func (f Final) Error() string { return string(f) }

// identify reads the server's run_id on c, a connection just made, before any request on it,
// and claims it; the error to refuse the connection with otherwise.
func (i *Identity) identify(c redis.Conn) error {
	return i.identifyBy(func(args ...string) (string, error) {
		rest := make([]interface{}, 0, len(args)-1)
		for _, a := range args[1:] {
			rest = append(rest, a)
		}
		return redis.String(c.Do(args[0], rest...))
	})
}

// Ask is one request on a connection being set up: its text reply, or an error (an error reply
// as redis.Error or Error; anything else, the connection failed).
type Ask func(args ...string) (string, error)

// identifyBy reads the server's run_id with ask (DLOCK.RUNID, or INFO server where the module
// is older than that command) and claims it; the error to refuse the connection with otherwise.
func (i *Identity) identifyBy(ask Ask) error {
	if i == nil {
		return nil
	}
	id, err := ask("DLOCK.RUNID")
	if said, ok := replyOf(err); ok && UnknownCommand(said) {
		// A module older than DLOCK.RUNID: INFO server shows the same run_id.
		info, err := ask("INFO", "server")
		if said, ok := replyOf(err); ok {
			return i.refused(said, err, infoRefused)
		} else if err != nil {
			return err
		}
		return i.check(RunID(info))
	} else if ok {
		return i.refused(said, err, runIDRefused)
	} else if err != nil {
		return err
	}
	return i.check(id)
}

// replyOf is the error reply err is, if it is one (redigo's, go-redis's, or an application
// pool's).
func replyOf(err error) (string, bool) {
	var r redis.Error
	if errors.As(err, &r) {
		return string(r), true
	}
	var g goredislib.Error
	if errors.As(err, &g) {
		return g.Error(), true
	}
	var e Error
	if errors.As(err, &e) {
		return string(e), true
	}
	return "", false
}

// refused: the server answered the error reply said (err) instead of its run_id: a login
// refused is said as any first request says it (NOAUTH: no password given); anything else is
// what to allow (say).
func (i *Identity) refused(said string, err error, say func(string) string) error {
	defer i.registry.Met(i.node)
	if _, login := refusedLogin(said); login {
		return err
	}
	if strings.HasPrefix(said, "NOPERM") {
		return Final(say(said)) // connecting again cannot cure it
	}
	return Refusal(say(said))
}

// check claims the server whose run_id is id ("": its INFO server had none).
func (i *Identity) check(id string) error {
	defer i.registry.Met(i.node)
	if id == "" {
		return Refusal("cannot tell which server this is: INFO server has no run_id")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if id == i.seen {
		return nil
	}
	if why := i.registry.claim(i.node, id, i.seen); why != "" {
		return Refusal(why)
	}
	i.seen = id
	return nil
}

// RunID is the run_id field of an INFO server reply ("" when it has none).
func RunID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if line = strings.TrimRight(line, "\r"); strings.HasPrefix(line, "run_id:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "run_id:"))
		}
	}
	return ""
}

// UnknownCommand: said (an error reply, code first) is the server not knowing the command: a
// module older than DLOCK.RUNID (or none), whose run_id INFO server still gives.
func UnknownCommand(said string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimPrefix(said, "ERR ")), "unknown command")
}

// runIDRefused: why a server that refused DLOCK.RUNID (it said so: NOPERM, a user without it)
// is refused.
func runIDRefused(said string) string {
	return "cannot tell which server this is (DLOCK.RUNID refused: " + said + "): allow the user DLOCK.RUNID (+dlock.runid; +@dlock has it on Redis 7.2+), which dlock reads the server's run_id with"
}

// infoRefused: why a server that refused INFO server (it said so; a module older than
// DLOCK.RUNID) is refused.
func infoRefused(said string) string {
	return "cannot tell which server this is (INFO server refused: " + said + "): allow the user INFO (+info), which dlock reads the server's run_id with"
}
