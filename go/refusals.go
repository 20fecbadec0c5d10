package dlock

import "sort"

// A refusal in a connection's setup that waiting cannot cure (conformance/README.md: credentials
// or permission refused, a database the server does not have; transport.Failure.Refused) is
// final for the call that met it: the acquirer keeps it (acquirer.final) and answers every later
// ask of that node with it instead of connecting again, and the attempt (attempt.go
// refusedForGood) ends the call once such nodes leave a quorum out of reach.

// reachable is nodes but those refused for the call (nothing of the call is on them).
func (a *acquirer) reachable(nodes []int) []int {
	var left []int
	for _, n := range nodes {
		if _, refused := a.final[n]; !refused {
			left = append(left, n)
		}
	}
	return left
}

// told: an attempt ended by refusals for the call names every node known to have failed, the
// replies in hand but not fed yet included.
func (r *running) told(err *attemptError) {
	if !err.final {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range r.inputs {
		if in.kind == actAsk && in.reply.failure != nil && !named(err.failures, in.reply.failure.Node) {
			err.failures = append(err.failures, *in.reply.failure)
		}
	}
	place := map[string]int{}
	for i, n := range r.a.calls.b.nodes {
		place[n.Name()] = i
	}
	sort.SliceStable(err.failures, func(i, j int) bool { return place[err.failures[i].Node] < place[err.failures[j].Node] })
}

func named(failures []NodeFailure, node string) bool {
	for _, f := range failures {
		if f.Node == node {
			return true
		}
	}
	return false
}
