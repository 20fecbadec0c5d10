package dlock

// The shared conformance table (conformance/*.json, format in conformance/README.md): every
// case of every file run against this client's pure functions, as the Rust, Python and Node
// suites run them.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlock.dev/dlock/transport"
)

type jsonCase = map[string]interface{}

func table(t *testing.T, name string) []jsonCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "conformance", name))
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []jsonCase }
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(file.Cases) == 0 {
		t.Fatalf("%s has no cases", name)
	}
	return file.Cases
}

func label(c jsonCase) string {
	if n, ok := c["name"].(string); ok {
		return n
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func num(v interface{}) int { return int(v.(float64)) }

func token(v interface{}) uint64 {
	n, err := strconv.ParseUint(v.(string), 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func TestConformanceQuorum(t *testing.T) {
	for _, c := range table(t, "quorum.json") {
		kind := Exclusive
		switch c["kind"] {
		case "shared":
			kind = SharedKind
		case "semaphore":
			kind = SemaphoreKind(num(c["limit"]))
		}
		if got := kind.Quorum(num(c["nodes"])); got != num(c["quorum"]) {
			t.Errorf("%s: quorum %d", label(c), got)
		}
	}
}

func TestConformanceValidity(t *testing.T) {
	msf := func(v interface{}) time.Duration { return time.Duration(v.(float64) * float64(time.Millisecond)) }
	for _, c := range table(t, "validity.json") {
		left, ok := Validity(msf(c["ttl_ms"]), msf(c["elapsed_ms"]), Drift{Factor: c["drift_factor"].(float64), Constant: msf(c["drift_constant_ms"])})
		want, has := c["validity_ms"].(float64)
		if ok != has || (has && math.Abs(float64(left)/float64(time.Millisecond)-want) >= 0.001) {
			t.Errorf("%s: %v %v", label(c), left, ok)
		}
	}
}

var policies = map[string]policy{"queue": queuePolicy, "no_wait": {commit: true}, "no_wait_uncommitted": {}}

// answer is a node's answer to an ask as the driver hands it over.
func answer(node int, v interface{}) reply {
	name := fmt.Sprintf("node %d", node)
	switch v {
	case "nil":
		return reply{}
	case "failed":
		return reply{failure: &NodeFailure{Node: name, Reason: "cannot connect"}}
	case "no_reply":
		return reply{failure: &NodeFailure{Node: name, Reason: "timed out after 50ms", NoReply: true}}
	case "wrong_kind":
		return reply{failure: &NodeFailure{Node: name, Reason: "WRONGKIND held as a semaphore"}}
	}
	// An error reply: redigo keeps the server's words, code included.
	if said, ok := v.(map[string]interface{})["error"].(string); ok {
		return reply{failure: &NodeFailure{Node: name, Reason: said}}
	}
	return reply{token: token(v.(map[string]interface{})["grant"])}
}

func fenceAnswer(node int, v interface{}) *NodeFailure {
	switch v {
	case "committed":
		return nil
	case "refused":
		return &NodeFailure{Node: fmt.Sprintf("node %d", node), Reason: "fence refused: lock no longer held"}
	}
	return &NodeFailure{Node: fmt.Sprintf("node %d", node), Reason: "cannot connect"}
}

func errorShown(e *attemptError) interface{} {
	switch e.kind {
	case ErrNoQuorum:
		nodes := []interface{}{}
		for _, f := range e.failures {
			n, _ := strconv.Atoi(strings.TrimPrefix(f.Node, "node "))
			nodes = append(nodes, float64(n))
		}
		return map[string]interface{}{"no_quorum": nodes}
	case ErrContended:
		return "contended"
	case ErrWrongKind:
		return "wrong_kind"
	case ErrInvalidArgument:
		return "invalid"
	}
	return "expired"
}

func floats(ns []int) []interface{} {
	out := []interface{}{}
	for _, n := range ns {
		out = append(out, float64(n))
	}
	return out
}

// shown is actions as the JSON has them.
func shown(actions []action) []interface{} {
	out := []interface{}{}
	for _, a := range actions {
		var v interface{}
		switch a.kind {
		case actAsk:
			v = map[string]interface{}{"ask": map[string]interface{}{"round": float64(a.round), "nodes": floats(a.nodes)}}
		case actAskAgain:
			v = map[string]interface{}{"ask_again": map[string]interface{}{"node": float64(a.node), "round": float64(a.round), "after_pause": a.afterPause}}
		case actFence:
			v = map[string]interface{}{"fence": map[string]interface{}{"round": float64(a.round), "token": strconv.FormatUint(a.token, 10), "nodes": floats(a.nodes)}}
		case actRelease:
			v = map[string]interface{}{"release": map[string]interface{}{"round": float64(a.round), "nodes": floats(a.nodes)}}
		case actHeld:
			v = map[string]interface{}{"held": map[string]interface{}{"round": float64(a.round), "token": strconv.FormatUint(a.token, 10)}}
		case actFailed:
			v = map[string]interface{}{"failed": errorShown(a.err)}
		}
		out = append(out, v)
	}
	return out
}

// feed gives the attempt one scripted input.
func feed(a *attempt, given interface{}) []action {
	if given == "deadline" {
		return a.onDeadline()
	}
	for what, v := range given.(map[string]interface{}) {
		in := v.(map[string]interface{})
		node, round := num(in["node"]), num(in["round"])
		flag := func(key string, def bool) bool {
			if b, ok := in[key].(bool); ok {
				return b
			}
			return def
		}
		switch what {
		case "reply":
			return a.onReply(node, round, answer(node, in["answer"]), flag("past_deadline", false))
		case "fenced":
			return a.onFenced(node, round, fenceAnswer(node, in["answer"]), flag("valid", true))
		case "pause_over":
			return a.onPauseOver(node, round)
		case "late":
			return a.onLate(node, round, answer(node, in["answer"]), flag("released", false))
		}
		panic("unknown input " + what)
	}
	panic("empty input")
}

func same(t *testing.T, what string, got, want interface{}) {
	t.Helper()
	if want == nil {
		want = []interface{}{}
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s:\n got  %s\n want %s", what, g, w)
	}
}

func TestConformanceAttempts(t *testing.T) {
	for _, c := range table(t, "attempts.json") {
		a, start := startAttempt(num(c["nodes"]), num(c["needed"]), policies[c["policy"].(string)])
		same(t, label(c)+": start", shown(start), c["start"])
		for i, entry := range c["script"].([]interface{}) {
			e := entry.(map[string]interface{})
			same(t, fmt.Sprintf("%s: input %d %v", label(c), i, e["on"]), shown(feed(a, e["on"])), e["do"])
		}
	}
}

func TestConformanceReplies(t *testing.T) {
	names := map[outcomeKind]string{outGranted: "granted", outBusy: "busy", outFailed: "failed", outWrongKind: "wrong_kind", outInvalid: "invalid"}
	for _, c := range table(t, "replies.json") {
		out := classify(answer(0, c["answer"]), policies[c["policy"].(string)], c["past_deadline"].(bool))
		if names[out.kind] != c["counts_as"] {
			t.Errorf("%s: counts as %s", label(c), names[out.kind])
		}
	}
}

func TestConformanceLeases(t *testing.T) {
	names := map[leaseVerdict]string{leaseHeld: "held", leaseRenew: "renew", leaseExpired: "expired"}
	for _, c := range table(t, "leases.json") {
		left, ok := c["left_ms"].(float64)
		got := lease(num(c["nodes"]), time.Duration(left)*time.Millisecond, ok, time.Duration(num(c["ttl_ms"]))*time.Millisecond, c["renewed"].(bool))
		if names[got] != c["lease"] {
			t.Errorf("%s: %s", label(c), names[got])
		}
	}
}

func TestConformanceRetries(t *testing.T) {
	kinds := map[string]error{"contended": ErrContended, "no_quorum": ErrNoQuorum, "wrong_kind": ErrWrongKind, "expired": ErrValidityExpired, "invalid": ErrInvalidArgument}
	for _, c := range table(t, "retries.json") {
		count := math.MaxInt
		if n, ok := c["retry_count"].(float64); ok {
			count = int(n)
		}
		again := anotherAttempt(policies[c["policy"].(string)], &attemptError{kind: kinds[c["error"].(string)]}, c["out_of_time"].(bool), num(c["attempts"]), count)
		if again != c["again"] {
			t.Errorf("%s: again %v", label(c), again)
		}
	}
}

// steps is a case's steps as the machine gives them.
func steps(listed []interface{}) []step {
	out := []step{}
	for _, l := range listed {
		s := l.(map[string]interface{})
		nodes := []int(nil)
		if ns, ok := s["nodes"].([]interface{}); ok {
			nodes = []int{}
			for _, n := range ns {
				nodes = append(nodes, num(n))
			}
		}
		kinds := map[string]stepKind{"wait": stepWait, "fence": stepFence, "release": stepRelease, "held": stepHeld, "failed": stepFailed}
		st := step{Kind: kinds[s["step"].(string)], Nodes: nodes}
		if r, ok := s["round"].(float64); ok {
			st.Round = int(r)
		}
		if tok, ok := s["token"]; ok {
			st.Token = token(tok)
		}
		out = append(out, st)
	}
	return out
}

func eventOf(e map[string]interface{}) event {
	ev := event{Node: num(e["node"]), Round: num(e["round"])}
	switch e["event"] {
	case "granted":
		ev.Kind, ev.Token = evGranted, token(e["token"])
	case "unavailable":
		ev.Kind = evUnavailable
	default:
		ev.Kind, ev.Committed = evFenced, e["committed"].(bool)
	}
	return ev
}

func TestConformanceAcquisition(t *testing.T) {
	for _, c := range table(t, "acquisition.json") {
		var a *acquisition
		var start []step
		if once, _ := c["once"].(bool); once {
			commit, has := c["commit"].(bool)
			a, start = startOnce(num(c["nodes"]), num(c["needed"]), commit || !has)
		} else {
			a, start = startAcquisition(num(c["nodes"]), num(c["needed"]))
		}
		same(t, label(c)+": start", start, steps(c["start"].([]interface{})))
		for i, entry := range c["script"].([]interface{}) {
			e := entry.(map[string]interface{})
			got := a.On(eventOf(e["on"].(map[string]interface{})))
			if got == nil {
				got = []step{}
			}
			same(t, fmt.Sprintf("%s: event %d", label(c), i), got, steps(e["steps"].([]interface{})))
		}
		tok, isHeld := a.Held()
		if want, ok := c["held"].(string); ok != isHeld || (ok && token(want) != tok) {
			t.Errorf("%s: held %v %d", label(c), isHeld, tok)
		}
		if a.Round() != num(c["round"]) {
			t.Errorf("%s: round %d", label(c), a.Round())
		}
	}
}

func TestConformanceSlots(t *testing.T) {
	for _, c := range table(t, "slots.json") {
		if got := transport.KeySlot(c["key"].(string)); got != num(c["slot"]) {
			t.Errorf("%q: slot %d, want %v", c["key"], got, c["slot"])
		}
	}
}

func TestConformanceURLs(t *testing.T) {
	forms := map[transport.Form]string{transport.FormSingle: "single", transport.FormCluster: "cluster", transport.FormSentinel: "sentinel"}
	for _, c := range table(t, "urls.json") {
		raw := c["url"].(string)
		u, err := transport.Parse(raw)
		_, cerr := Connect([]string{raw})
		if !c["accepted"].(bool) {
			if err == nil || !errorIs(cerr, ErrInvalidArgument) || strings.Contains(cerr.Error(), "secret") {
				t.Errorf("%q: accepted, or refused badly: %v / %v", raw, err, cerr)
			}
			continue
		}
		if err != nil || cerr != nil {
			t.Errorf("%q: refused: %v / %v", raw, err, cerr)
			continue
		}
		if forms[u.Form] != c["form"] || u.TLS != c["tls"] {
			t.Errorf("%q: form %s tls %v", raw, forms[u.Form], u.TLS)
		}
		if ports, ok := c["ports"]; ok {
			same(t, raw+": ports", floats(u.Ports()), ports)
		}
		if name, ok := c["name"]; ok && u.Name != name {
			t.Errorf("%q: name %q", raw, u.Name)
		}
	}
}

func TestConformanceRenewals(t *testing.T) {
	lasts := map[string]extension{"extended": extended, "refused": refused, "unconfirmed": unconfirmed}
	msOf := func(v interface{}) time.Duration { return time.Duration(num(v)) * time.Millisecond }
	for _, c := range table(t, "renewals.json") {
		pause, lost := renewal(msOf(c["ttl_ms"]), msOf(c["interval_ms"]), msOf(c["left_ms"]), lasts[c["last"].(string)])
		var got interface{} = "lost"
		if !lost {
			got = map[string]interface{}{"extend_in_ms": float64(pause.Milliseconds())}
		}
		same(t, label(c), got, c["next"])
	}
}

// leaderOf is a leaders.json leader ({id, value, epoch}) as the client's.
func leaderOf(v interface{}) *Leader {
	l := v.(map[string]interface{})
	return &Leader{ID: l["id"].(string), Value: l["value"].(string), Epoch: token(l["epoch"])}
}

func TestConformanceLeaders(t *testing.T) {
	for _, c := range table(t, "leaders.json") {
		var views []**seen
		for _, n := range c["nodes"].([]interface{}) {
			var h *seen
			switch n := n.(type) {
			case nil:
				views = append(views, nil)
				continue
			case map[string]interface{}:
				h = &seen{owner: n["owner"].(string), token: token(n["token"])}
			}
			views = append(views, &h)
		}
		var previous *Leader
		if p, ok := c["previous"]; ok {
			previous = leaderOf(p)
		}
		got, known := leaderView(views, num(c["needed"]), previous)
		switch want := c["leader"]; {
		case want == nil && known, want == "none" && (!known || got != nil):
			t.Errorf("%s: %v %v", label(c), got, known)
		case want != nil && want != "none" && (!known || got == nil || *got != *leaderOf(want)):
			t.Errorf("%s: %+v %v", label(c), got, known)
		}
	}
}
