// Package servers starts real redis-server processes with the freshly built module for the
// Go client's tests (the twin of testkit/src/lib.rs, node/test/servers.ts and
// python/tests/conftest.py): free ports, temp dirs, killed when the test ends. DLOCK_MODULE,
// DLOCK_REDIS_SERVER and DLOCK_CLI override where things are.
package servers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func itoa(n int) string { return fmt.Sprint(n) }

// Repo is the repository's root.
func Repo() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..")
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Module is the dlock module to load; CLI the dlock binary; Binary the redis-server.
func Module() string { return env("DLOCK_MODULE", filepath.Join(Repo(), "target/release/libdlock.so")) }
func CLI() string    { return env("DLOCK_CLI", filepath.Join(Repo(), "target/release/dlock")) }
func Binary() string { return env("DLOCK_REDIS_SERVER", "redis-server") }

// FreePort is a TCP port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Flavour is how a server listens and how the tests reach it: plain TCP by default.
type Flavour struct {
	// Listen: the arguments saying where it listens (default --port P).
	Listen func(port int, dir string) []string
	// URL: its URL (default redis://127.0.0.1:P).
	URL func(port int, dir string) string
	// Args: more server arguments.
	Args []string
	// TLS and Password: what the tests' own connections need.
	TLS      *tls.Config
	Password string
	// NoModule: a server without dlock (a sentinel).
	NoModule bool
}

// Server is one redis-server process.
type Server struct {
	t       testing.TB
	Port    int
	Dir     string
	Flavour Flavour
	cmd     *exec.Cmd
}

// URL is how the client reaches it.
func (s *Server) URL() string {
	if s.Flavour.URL != nil {
		return s.Flavour.URL(s.Port, s.Dir)
	}
	return fmt.Sprintf("redis://127.0.0.1:%d", s.Port)
}

// New is a server not started yet (Spawn starts it); it is killed when the test ends.
func New(t testing.TB, port int, f Flavour) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "dlock-go-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, Port: port, Dir: dir, Flavour: f}
	t.Cleanup(s.Stop)
	return s
}

// Spawn starts the process.
func (s *Server) Spawn() {
	listen := []string{"--port", fmt.Sprint(s.Port)}
	if s.Flavour.Listen != nil {
		listen = s.Flavour.Listen(s.Port, s.Dir)
	}
	args := append(listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.Dir, "--logfile", "redis.log")
	args = append(args, s.Flavour.Args...)
	if !s.Flavour.NoModule {
		args = append(args, "--loadmodule", Module())
	}
	s.cmd = exec.Command(Binary(), args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	go func(c *exec.Cmd) { _ = c.Wait() }(s.cmd)
}

// Ready: ours answers (the process_id it reports is our child's: two servers may race for one
// port).
func (s *Server) Ready(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		info, err := redis.String(s.Do("INFO", "server"))
		if err == nil && strings.Contains(info, fmt.Sprintf("process_id:%d\r", s.cmd.Process.Pid)) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// Do sends one command on a fresh connection.
func (s *Server) Do(cmd string, args ...interface{}) (interface{}, error) {
	replies, err := s.Pipeline([][]interface{}{append([]interface{}{cmd}, args...)})
	if err != nil {
		return nil, err
	}
	if e, ok := replies[0].(error); ok {
		return nil, e
	}
	return replies[0], nil
}

// Pipeline sends commands in turn on one fresh connection (READONLY then a read, say); an
// error reply is an error in its place.
func (s *Server) Pipeline(cmds [][]interface{}) ([]interface{}, error) {
	opts := []redis.DialOption{redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5 * time.Second),
		redis.DialWriteTimeout(time.Second), redis.DialPassword(s.Flavour.Password)}
	network, addr := "tcp", fmt.Sprintf("127.0.0.1:%d", s.Port)
	if strings.HasPrefix(s.URL(), "unix://") {
		network, addr = "unix", strings.TrimPrefix(s.URL(), "unix://")
	}
	if s.Flavour.TLS != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(s.Flavour.TLS))
	}
	c, err := redis.DialContext(context.Background(), network, addr, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []interface{}
	for _, cmd := range cmds {
		r, err := c.Do(cmd[0].(string), cmd[1:]...)
		if _, isReply := err.(redis.Error); err != nil && !isReply {
			return nil, err
		}
		if err != nil {
			r = err
		}
		out = append(out, r)
	}
	return out, nil
}

// Pause freezes the process (SIGSTOP): it keeps its connections open and answers nothing until
// Resume (SIGCONT).
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume thaws a paused process.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Kill stops the process at once (SIGKILL); Spawn starts it again on the same port and dir.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		for i := 0; i < 100 && s.listening(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (s *Server) listening() bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), 50*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// Stop kills it and removes its directory.
func (s *Server) Stop() {
	s.Kill()
	_ = os.RemoveAll(s.Dir)
}

// Start is count fresh masters with the module.
func Start(t testing.TB, count int, f Flavour) []*Server {
	t.Helper()
	if _, err := os.Stat(Module()); err != nil {
		t.Fatalf("%s is missing: run `cargo build --release -p dlock` (or set DLOCK_MODULE)", Module())
	}
	var out []*Server
	for len(out) < count {
		for tries := 0; ; tries++ {
			s := New(t, FreePort(t), f)
			s.Spawn()
			if s.Ready(10 * time.Second) {
				out = append(out, s)
				break
			}
			s.Stop()
			if tries >= 5 {
				t.Fatalf("redis-server would not start (see %s/redis.log)", s.Dir)
			}
		}
	}
	return out
}

// URLs are the servers' URLs.
func URLs(list []*Server) []string {
	urls := make([]string, len(list))
	for i, s := range list {
		urls[i] = s.URL()
	}
	return urls
}

// Eventually polls check until it holds, failing the test after within.
func Eventually(t testing.TB, within time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
