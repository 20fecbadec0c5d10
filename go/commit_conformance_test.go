package dlock

// conformance/commits.json through the port of the commit machine (commit.go), as the Rust
// suite's deferred_commits runs it: whether a commit is owed, the one FENCE round to send, and
// the outcome after each reply.

import (
	"fmt"
	"reflect"
	"testing"
)

// commitShown is an outcome as the JSON has it: "pending", "lost" or {"committed": token}.
func commitShown(outcome commitOutcome, token uint64) interface{} {
	switch outcome {
	case commitPending:
		return "pending"
	case commitLost:
		return "lost"
	}
	return map[string]interface{}{"committed": fmt.Sprint(token)}
}

func ints(v interface{}) []int {
	out := []int{}
	for _, n := range v.([]interface{}) {
		out = append(out, num(n))
	}
	return out
}

func TestConformanceCommits(t *testing.T) {
	for _, c := range table(t, "commits.json") {
		at := label(c)
		nodes := num(c["nodes"])
		isOwed := owed(c["policy"] == "no_wait", nodes, c["fencing"].(bool))
		if isOwed != c["owed"].(bool) {
			t.Errorf("%s: owed %v", at, isOwed)
		}
		start := c["start"].(map[string]interface{})
		valid, given := c["valid"].(bool)
		valid = valid || !given
		if !isOwed || !valid {
			got := commitShown(commitCommitted, token(c["token"]))
			if !valid {
				got = commitShown(commitLost, 0)
			}
			same(t, at+": outcome", got, start["outcome"])
			if _, fence := start["fence"]; fence {
				t.Errorf("%s: a FENCE where nothing is sent", at)
			}
			continue
		}
		machine, asked := startCommit(nodes, num(c["needed"]), token(c["token"]), ints(c["holding"]))
		fence := start["fence"].(map[string]interface{})
		if want := ints(fence["nodes"]); !reflect.DeepEqual(asked, want) {
			t.Errorf("%s: FENCE sent to %v, want %v", at, asked, want)
		}
		if machine.token != token(fence["token"]) {
			t.Errorf("%s: FENCE of %d", at, machine.token)
		}
		same(t, at+": start", commitShown(machine.outcome, machine.token), start["outcome"])
		for i, entry := range c["script"].([]interface{}) {
			step := entry.(map[string]interface{})
			fenced := step["fenced"].(map[string]interface{})
			got := machine.onFenced(num(fenced["node"]), fenced["answer"] == "committed")
			same(t, fmt.Sprintf("%s: step %d %v", at, i, fenced), commitShown(got, machine.token), step["outcome"])
		}
	}
}
