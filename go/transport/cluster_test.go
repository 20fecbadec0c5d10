package transport

import "testing"

// A command goes to its key's slot: a set's DLOCK.*ALL by its first key, after numkeys.
func TestRoutingKey(t *testing.T) {
	cases := map[string][]string{
		"r":        {"DLOCK.ACQUIRE", "r", "o", "1000"},
		"{acct}:1": {"DLOCK.ACQUIREALL", "2", "{acct}:1", "{acct}:2", "o", "1000"},
		"a":        {"DLOCK.RELEASEALL", "1", "a", "o"},
		"":         {"PING"},
	}
	for want, cmd := range cases {
		if got := routingKey(cmd); got != want {
			t.Errorf("%v: routed by %q, want %q", cmd, got, want)
		}
	}
}
