package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gomodule/redigo/redis"
)

// Which redis-server a connection reached, so that one server never counts twice in a quorum
// (client/src/transport/identity.rs, python/src/dlock/_pure/identity.py,
// node/src/transport/identity.ts).
//
// A URL's text does not say which server it reaches: localhost and 127.0.0.1, a sentinel
// group's master and the same master given directly, two seeds of one Redis Cluster all name
// one process. Counted as two nodes, that one process made a quorum alone (issue 48). So every
// new connection, before its first request, reads the server's run_id (INFO server: one per
// process, the same whatever address reached it, new after a restart) and claims it for its
// quorum node in the manager's Registry. A server another node already claimed is refused: the
// connection is closed, the node's calls fail from then on without a request sent, and every
// acquisition fails with ErrInvalidArgument naming both nodes. A server that cannot say its
// run_id (an ACL user without INFO) is refused too, with what to allow.

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

// Identity is one server's place in the registry (a plain node's server, a cluster's master,
// the master a sentinel group names): the run_id its connections last showed. nil checks
// nothing.
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

// identify reads the server's run_id on c, a connection just made, before any request on it,
// and claims it; the error to refuse the connection with otherwise.
func (i *Identity) identify(c redis.Conn) error {
	if i == nil {
		return nil
	}
	info, err := redis.String(c.Do("INFO", "server"))
	var reply redis.Error
	if errors.As(err, &reply) {
		return i.refused(string(reply), err)
	}
	if err != nil {
		return err
	}
	return i.check(info)
}

// refused: INFO server answered the error reply said (err): a login refused is said as any
// first request says it (NOAUTH: no password given); anything else is what to allow.
func (i *Identity) refused(said string, err error) error {
	defer i.registry.Met(i.node)
	if _, login := refusedLogin(said); login {
		return err
	}
	return Refusal(unreadable(said))
}

// check claims the server whose INFO server reply is info.
func (i *Identity) check(info string) error {
	defer i.registry.Met(i.node)
	id := RunID(info)
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

// unreadable: why a server that refused INFO server (it said so) is refused.
func unreadable(said string) string {
	return "cannot tell which server this is (INFO server refused: " + said + "): allow the user INFO (+info), which dlock reads the server's run_id with"
}
