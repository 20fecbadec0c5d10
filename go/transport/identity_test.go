package transport

import (
	"strings"
	"testing"
)

func TestTheRunIDIsReadFromInfoServer(t *testing.T) {
	if id := RunID("# Server\r\nredis_version:7.0.15\r\nrun_id:3f2a\r\ntcp_port:6379\r\n"); id != "3f2a" {
		t.Errorf("run_id %q", id)
	}
	if id := RunID("# Server\r\nrun_id:\r\n"); id != "" {
		t.Errorf("an empty run_id read as %q", id)
	}
}

func TestAServerReachedByTwoNodesIsRefusedNamingBothInOrder(t *testing.T) {
	r := NewRegistry([]string{"redis://a:1", "redis://b:2", "redis://c:3"})
	first, second := NewIdentity(r, 2), NewIdentity(r, 0)
	if err := first.check("same"); err != nil {
		t.Fatal(err)
	}
	err := second.check("same")
	want := "nodes redis://a:1 and redis://c:3 are the same server (run_id same): list each server once"
	if err == nil || err.Error() != want || r.Refusal() != want || r.Refused(0) != want || r.Refused(2) != "" {
		t.Fatalf("refused with %v (refusal %q)", err, r.Refusal())
	}
}

func TestARestartLetsTheOldRunIDGoAndAnAliasKeepsIt(t *testing.T) {
	r := NewRegistry([]string{"a", "b"})
	a, alias := NewIdentity(r, 0), NewIdentity(r, 0).Another()
	for _, id := range []*Identity{a, alias} {
		if err := id.check("one"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.check("two"); err != nil { // a restart behind a
		t.Fatal(err)
	}
	if err := NewIdentity(r, 1).check("one"); err == nil || !strings.Contains(err.Error(), "same server") {
		t.Fatalf("the alias still reaches one: %v", err)
	}
	if err := alias.check("three"); err != nil {
		t.Fatal(err)
	}
	if err := NewIdentity(r, 1).check("one"); err != nil {
		t.Fatalf("that process is gone: %v", err)
	}
}

func TestAClaimOutlivesItsServerAndASentinelGroupIsOnePlace(t *testing.T) {
	r := NewRegistry([]string{"a", "b", "c"})
	if err := NewIdentity(r, 0).check("old"); err != nil { // a cluster master, later forgotten
		t.Fatal(err)
	}
	if err := NewIdentity(r, 1).check("old"); err == nil {
		t.Fatal("a forgotten master is still its node's")
	}
	group := NewIdentity(r, 0) // every master the group names in turn
	for _, id := range []string{"m1", "m2"} {
		if err := group.check(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewIdentity(r, 2).check("m1"); err != nil {
		t.Fatalf("the failover let m1 go: %v", err)
	}
}

func TestAnUnknownCommandIsToldFromARefusal(t *testing.T) {
	if !UnknownCommand("ERR unknown command 'DLOCK.RUNID', with args beginning with: ") {
		t.Error("unknown command not told")
	}
	if UnknownCommand("NOPERM User app has no permissions to run the 'dlock.runid' command") {
		t.Error("a refusal read as an unknown command")
	}
}
