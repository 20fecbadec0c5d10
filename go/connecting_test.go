package dlock_test

// Production-like nodes: TLS with client certificates (a PKI made now with the openssl CLI),
// a unix socket, an ACL password from the environment. Nothing is mocked.

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

// On both drivers: TLS is set up by each (redigo's DialTLSConfig, go-redis's TLSConfig).
func TestTLSWithClientCertificates(t *testing.T) {
	pki := servers.MakePKI(t)
	nodes := servers.Start(t, 3, pki.TLSFlavour(t))
	onBothDrivers(t, func(t *testing.T, d dlock.Driver) { tlsWithClientCertificates(t, d, pki, nodes) })
}

func tlsWithClientCertificates(t *testing.T, d dlock.Driver, pki servers.PKI, nodes []*servers.Server) {
	ctx := deadline(t, 30*time.Second)
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(time.Second), dlock.WithTLSFiles(pki.CA, pki.ClientCert, pki.ClientKey), dlock.WithDriver(d))
	lock, err := m.Acquire(ctx, "tls", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Without the CA the servers' certificates are refused; without a client certificate the
	// servers refuse the client. Each is the nodes' failure, named.
	for what, option := range map[string]dlock.Option{
		"no CA":                 dlock.WithTLSFiles("", pki.ClientCert, pki.ClientKey),
		"no client certificate": dlock.WithTLSFiles(pki.CA, "", ""),
	} {
		m := connect(t, servers.URLs(nodes), dlock.WithTimeout(500*time.Millisecond), option, dlock.WithDriver(d))
		_, err := m.Acquire(ctx, "tls", 5*time.Second)
		var e *dlock.Error
		// At least two of three failed: the attempt ends once a quorum is out of reach, and
		// the third node's failure may come after that.
		if !errors.As(err, &e) || !errors.Is(err, dlock.ErrNoQuorum) || len(e.Failures) < 2 {
			t.Fatalf("%s: %v", what, err)
		}
		if what == "no CA" && !strings.Contains(e.Failures[0].Reason, "certificate") {
			t.Errorf("no CA: %s", e.Failures[0].Reason)
		}
		t.Logf("%s: %s", what, e.Failures[0].Reason)
	}
}

// On both drivers: each sends the login its own way (redigo AUTH, go-redis HELLO ... AUTH).
func TestUnixSocketWithAPasswordFromTheEnvironment(t *testing.T) {
	onBothDrivers(t, unixSocketWithAPassword)
}

func unixSocketWithAPassword(t *testing.T, d dlock.Driver) {
	const password = "s3cret-pw-93f"
	flavour := servers.Flavour{
		Listen: func(_ int, dir string) []string {
			return []string{"--port", "0", "--unixsocket", filepath.Join(dir, "redis.sock")}
		},
		URL:      func(_ int, dir string) string { return "unix://" + filepath.Join(dir, "redis.sock") },
		Args:     []string{"--requirepass", password},
		Password: password,
	}
	nodes := servers.Start(t, 1, flavour)
	ctx := deadline(t, 30*time.Second)
	t.Setenv("DLOCK_PASSWORD", password)
	m := connect(t, servers.URLs(nodes), dlock.WithTimeout(time.Second), dlock.FromEnv(), dlock.WithDriver(d))
	lock, err := m.Acquire(ctx, "socket", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release(ctx)

	t.Setenv("DLOCK_PASSWORD", "wrong-pw-1c5")
	wrong := connect(t, servers.URLs(nodes), dlock.WithTimeout(time.Second), dlock.FromEnv(), dlock.WithDriver(d))
	_, err = wrong.Acquire(ctx, "socket", 5*time.Second)
	if !errors.Is(err, dlock.ErrNoQuorum) {
		t.Fatalf("a wrong password: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "wrong-pw-1c5") || strings.Contains(msg, password) {
		t.Errorf("the password shows: %s", msg)
	}
	t.Log(err)
	none := connect(t, servers.URLs(nodes), dlock.WithTimeout(time.Second), dlock.WithDriver(d))
	if _, err := none.Acquire(ctx, "socket", 5*time.Second); !errors.Is(err, dlock.ErrNoQuorum) {
		t.Fatalf("no password: %v", err)
	}
}
