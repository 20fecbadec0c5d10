package dlock_test

// Go, the Rust CLI (dlock run), Python and Node contend for one resource from several processes
// on five masters: the critical sections never overlap and the fencing tokens strictly rise
// across the languages; and the kinds mean the same in every client. The CLI must be built;
// Python takes part when python/.venv exists (make python-venv), Node when node/dist does
// (make node-test) and node is on the PATH.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

const (
	interopRounds = 4
	interopHoldMS = 20
)

const pythonWorker = `
import sys, time
from dlock import LockManager
nodes, log, rounds, hold = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1000
with LockManager(nodes, timeout=0.5) as locks:
    for _ in range(rounds):
        with locks.lock("interop", ttl=10.0, wait=60.0) as lock:
            with open(log, "a") as f:
                f.write(f"python {lock.token()} start\n")
            time.sleep(hold)
            with open(log, "a") as f:
                f.write(f"python {lock.token()} end\n")
`

const nodeWorker = `
import { appendFileSync } from "node:fs";
const { LockManager } = await import(process.argv[1]);
const [nodes, log, rounds, hold] = [process.argv[2].split(","), process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
const locks = new LockManager(nodes, { timeout: 500 });
for (let i = 0; i < rounds; i++) {
  await locks.using("interop", { ttl: 10000, wait: 60000 }, async (lock) => {
    appendFileSync(log, "node " + (await lock.token()) + " start\n");
    await new Promise((r) => setTimeout(r, hold));
    appendFileSync(log, "node " + (await lock.token()) + " end\n");
  });
}
await locks.close();
`

// peers are the other clients present: Python's interpreter and Node's built package ("" when
// absent).
func peers(t *testing.T) (python, nodeIndex string) {
	if _, err := os.Stat(servers.CLI()); err != nil {
		t.Fatalf("%s is missing: run `cargo build --release -p dlock-cli` (or set DLOCK_CLI)", servers.CLI())
	}
	python = os.Getenv("DLOCK_PYTHON")
	if python == "" {
		python = filepath.Join(servers.Repo(), "python/.venv/bin/python")
	}
	if _, err := os.Stat(python); err != nil {
		t.Logf("Python left out: %s is missing (make python-venv)", python)
		python = ""
	}
	nodeIndex = os.Getenv("DLOCK_NODE_INDEX")
	if nodeIndex == "" {
		nodeIndex = filepath.Join(servers.Repo(), "node/dist/esm/index.js")
	}
	if _, err := exec.LookPath("node"); err != nil {
		nodeIndex = ""
	}
	if _, err := os.Stat(nodeIndex); err != nil || nodeIndex == "" {
		t.Logf("Node left out: node/dist or node is missing (make node-test)")
		nodeIndex = ""
	}
	return python, nodeIndex
}

func appendLine(t *testing.T, log, line string) {
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Error(err)
	}
}

func TestInteropNoOverlapAndRisingTokensAcrossClients(t *testing.T) {
	python, nodeIndex := peers(t)
	nodes := servers.Start(t, 5, servers.Flavour{})
	list := strings.Join(servers.URLs(nodes), ",")
	log := filepath.Join(t.TempDir(), "sections.log")
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := deadline(t, 150*time.Second)
	cmds := contenders(t, ctx, list, log, python, nodeIndex)
	var wg sync.WaitGroup
	for _, c := range cmds {
		c.Stderr = os.Stderr
		wg.Add(1)
		go func(c *exec.Cmd) {
			defer wg.Done()
			if err := c.Run(); err != nil {
				t.Errorf("%s: %v", c.Args[0], err)
			}
		}(c)
	}
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < interopRounds; i++ {
				err := m.WithLock(ctx, "interop", 10*time.Second, func(_ context.Context, l *dlock.Lock) error {
					appendLine(t, log, fmt.Sprintf("go %d start", tokenOf(t, l)))
					time.Sleep(interopHoldMS * time.Millisecond)
					appendLine(t, log, fmt.Sprintf("go %d end", tokenOf(t, l)))
					return nil
				}, dlock.Wait(60*time.Second))
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	checkSections(t, log, (len(cmds)+2)*interopRounds, python != "", nodeIndex != "")
	for _, s := range nodes {
		if st := status(t, s, "interop"); st != nil {
			t.Errorf("%s still holds: %v", s.URL(), st)
		}
	}
}

// contenders are the other processes: dlock run, the example program, Python and Node workers,
// two of each.
func contenders(t *testing.T, ctx context.Context, list, log, python, nodeIndex string) []*exec.Cmd {
	rounds, hold := strconv.Itoa(interopRounds), strconv.Itoa(interopHoldMS)
	section := fmt.Sprintf(`echo "rust $DLOCK_TOKEN start" >> "$LOG"; sleep %v; echo "rust $DLOCK_TOKEN end" >> "$LOG"`, float64(interopHoldMS)/1000)
	example := buildExample(t, "quorum")
	exampleSection := strings.ReplaceAll(section, "rust", "example")
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		// The program docs/go.md shows, as one more contender.
		program := exec.CommandContext(ctx, "sh", "-c", `for i in $(seq `+rounds+`); do "$@" || exit $?; done`, "sh", example, "interop", "sh", "-c", exampleSection)
		program.Env = append(os.Environ(), "LOG="+log, "DLOCK_NODES="+list)
		cmds = append(cmds, program)
		cli := exec.CommandContext(ctx, "sh", "-c", `for i in $(seq `+rounds+`); do "$@" || exit $?; done`, "sh",
			servers.CLI(), "run", "interop", "--nodes", list, "--timeout", "500ms", "--ttl", "10s", "--wait", "60s", "--", "sh", "-c", section)
		cli.Env = append(os.Environ(), "LOG="+log)
		cmds = append(cmds, cli)
		if python != "" {
			cmds = append(cmds, exec.CommandContext(ctx, python, "-c", pythonWorker, list, log, rounds, hold))
		}
		if nodeIndex != "" {
			cmds = append(cmds, exec.CommandContext(ctx, "node", "--input-type=module", "-e", nodeWorker, "file://"+nodeIndex, list, log, rounds, hold))
		}
	}
	return cmds
}

// checkSections: every section ends before the next starts, tokens rise, every client took
// part.
func checkSections(t *testing.T, log string, want int, python, node bool) {
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2*want {
		t.Fatalf("%d lines, want %d", len(lines), 2*want)
	}
	who := map[string]bool{}
	var last uint64
	for i := 0; i < len(lines); i += 2 {
		start, end := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(start) != 3 || len(end) != 3 || start[2] != "start" || end[2] != "end" || start[0] != end[0] || start[1] != end[1] {
			t.Fatalf("overlap: %q / %q", lines[i], lines[i+1])
		}
		token, err := strconv.ParseUint(start[1], 10, 64)
		if err != nil || token <= last {
			t.Fatalf("token %s after %d", start[1], last)
		}
		last = token
		who[start[0]] = true
	}
	expected := []string{"example", "go", "rust"}
	if python {
		expected = append(expected, "python")
	}
	if node {
		expected = append(expected, "node")
	}
	var got []string
	for w := range who {
		got = append(got, w)
	}
	sort.Strings(got)
	sort.Strings(expected)
	if strings.Join(got, ",") != strings.Join(expected, ",") {
		t.Errorf("clients %v, want %v", got, expected)
	}
}

// buildExample builds go/examples/NAME into the test's temp dir.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	if msg, err := exec.Command("go", "build", "-o", out, "./examples/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/%s: %v\n%s", name, err, msg)
	}
	return out
}

func TestTheRedsyncProgramRunsWithOnlyItsImportsChanged(t *testing.T) {
	program := buildExample(t, "redsync")
	nodes := servers.Start(t, 1, servers.Flavour{})
	cmd := exec.Command(program)
	cmd.Env = append(os.Environ(), fmt.Sprintf("DLOCK_NODE=127.0.0.1:%d", nodes[0].Port))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "token ") {
		t.Fatalf("%v: %s", err, out)
	}
	if st := status(t, nodes[0], "my-global-mutex"); st != nil {
		t.Errorf("not unlocked: %v", st)
	}
}

// cli runs dlock ARGS: its exit code and output.
func cli(t *testing.T, args ...string) (int, string) {
	out, err := exec.Command(servers.CLI(), args...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), strings.TrimSpace(string(out))
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, strings.TrimSpace(string(out))
}

// pythonTry is Python's answer to one try_lock: "held TOKEN" (then released) or the error's
// class name.
func pythonTry(t *testing.T, python, nodes, resource, kind string) string {
	script := `
import sys
import dlock
locks = dlock.LockManager(sys.argv[1].split(","), timeout=0.5)
try:
    lock = locks.try_lock(sys.argv[2], ttl=10.0, ` + kind + `)
    print("held", lock.token())
    lock.release()
except dlock.DlockError as e:
    print(type(e).__name__)
`
	out, err := exec.Command(python, "-c", script, nodes, resource).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestInteropKindsMeanTheSameInEveryClient(t *testing.T) {
	python, _ := peers(t)
	nodes := servers.Start(t, 3, servers.Flavour{})
	list := strings.Join(servers.URLs(nodes), ",")
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond))
	ctx := deadline(t, 60*time.Second)
	base := []string{"--nodes", list, "--timeout", "500ms"}

	// A Go reader and a CLI reader share the lock; a writer from any client is contended, a
	// permit the wrong kind.
	reader, err := m.Acquire(ctx, "rw", 10*time.Second, dlock.Shared())
	if err != nil {
		t.Fatal(err)
	}
	code, out := cli(t, append([]string{"acquire", "rw", "--shared"}, base...)...)
	if code != 0 {
		t.Fatalf("the CLI's reader: exit %d %s", code, out)
	}
	cliOwner := strings.Fields(out)[0]
	if code, _ := cli(t, append([]string{"acquire", "rw"}, base...)...); code != 3 {
		t.Errorf("the CLI's writer: exit %d, want 3", code)
	}
	if code, _ := cli(t, append([]string{"acquire", "rw", "--limit", "2"}, base...)...); code != 7 {
		t.Errorf("the CLI's permit: exit %d, want 7", code)
	}
	if _, err := m.Acquire(ctx, "rw", time.Second); !errors.Is(err, dlock.ErrContended) {
		t.Errorf("Go's writer: %v", err)
	}
	if _, err := m.Acquire(ctx, "rw", time.Second, dlock.Limit(2)); !errors.Is(err, dlock.ErrWrongKind) {
		t.Errorf("Go's permit: %v", err)
	}
	if python != "" {
		if got := pythonTry(t, python, list, "rw", "shared=True"); !strings.HasPrefix(got, "held ") {
			t.Errorf("Python's reader: %s", got)
		}
		if got := pythonTry(t, python, list, "rw", "shared=False"); got != "LockContended" {
			t.Errorf("Python's writer: %s", got)
		}
		if got := pythonTry(t, python, list, "rw", "limit=2"); got != "WrongKindError" {
			t.Errorf("Python's permit: %s", got)
		}
	}
	_ = reader.Release(ctx)
	cli(t, append([]string{"release", "rw", cliOwner}, base...)...)
	semaphoresAcrossClients(t, nodes, m, python)
}

// semaphoresAcrossClients: a semaphore of 2 holds one Go and one CLI permit, refuses a third in
// each client, and hands the CLI's permit to a waiting Go acquire.
func semaphoresAcrossClients(t *testing.T, nodes []*servers.Server, m *dlock.Manager, python string) {
	list := strings.Join(servers.URLs(nodes), ",")
	base := []string{"--nodes", list, "--timeout", "500ms"}
	ctx := deadline(t, 60*time.Second)
	permit, err := m.Acquire(ctx, "sem", 10*time.Second, dlock.Limit(2))
	if err != nil {
		t.Fatal(err)
	}
	code, out := cli(t, append([]string{"acquire", "sem", "--limit", "2"}, base...)...)
	if code != 0 {
		t.Fatalf("the CLI's permit: exit %d", code)
	}
	cliOwner := strings.Fields(out)[0]
	if code, _ := cli(t, append([]string{"acquire", "sem", "--limit", "2"}, base...)...); code != 3 {
		t.Errorf("a third permit in the CLI: exit %d, want 3", code)
	}
	if _, err := m.Acquire(ctx, "sem", time.Second, dlock.Limit(2)); !errors.Is(err, dlock.ErrContended) {
		t.Errorf("a third permit in Go: %v", err)
	}
	if python != "" {
		if got := pythonTry(t, python, list, "sem", "limit=2"); got != "LockContended" {
			t.Errorf("a third permit in Python: %s", got)
		}
	}
	waiting := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx, "sem", 10*time.Second, dlock.Limit(2), dlock.Wait(10*time.Second))
		if err == nil {
			err = l.Release(ctx)
		}
		waiting <- err
	}()
	waitWaiters(t, nodes[0], "sem", 1)
	if code, _ := cli(t, append([]string{"release", "sem", cliOwner}, base...)...); code != 0 {
		t.Errorf("the CLI's release: exit %d", code)
	}
	if err := <-waiting; err != nil {
		t.Errorf("the permit handed to Go: %v", err)
	}
	_ = permit.Release(ctx)
}

func TestTheGoRedisExampleRuns(t *testing.T) {
	program := buildExample(t, "goredis")
	nodes := servers.Start(t, 3, servers.Flavour{})
	cmd := exec.Command(program)
	cmd.Env = append(os.Environ(), "DLOCK_NODES="+strings.Join(servers.URLs(nodes), ","))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "token ") || !strings.Contains(string(out), "\ncontended while held\n") {
		t.Fatalf("%v: %s", err, out)
	}
	freeEverywhere(t, nodes, "report")
}
