package transport

import (
	"crypto/x509"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The words of diagnosis.go for failures the servers of errors_conformance_test.go cannot
// easily give (a reset TLS connection, a certificate); the rest run there against real servers.

func dial(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

func TestARefusedConnectionSaysWhatToCheck(t *testing.T) {
	refused := dial(os.NewSyscallError("connect", syscall.ECONNREFUSED))
	if why := cannotConnect(refused, false, time.Second); why != Refused {
		t.Errorf("refused: %s", why)
	}
	if why := cannotConnect(dial(syscall.ENOENT), false, time.Second); why != NoSocket {
		t.Errorf("no socket: %s", why)
	}
}

func TestAResetSuggestsTLSOnlyWhenPlain(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	if why := cannotConnect(reset, false, time.Second); why != PlainToTLS {
		t.Errorf("plain: %s", why)
	}
	if why := cannotConnect(reset, true, time.Second); strings.Contains(why, "rediss://") {
		t.Errorf("TLS: %s", why)
	}
	if why := broken(io.EOF, false, false); strings.Contains(why, "rediss://") {
		t.Errorf("a pooled connection broken (a restart): %s", why)
	}
	if why := broken(io.EOF, false, true); why != PlainToTLS {
		t.Errorf("a fresh one: %s", why)
	}
}

func TestLoginsAreRefusedWithoutQuotingThem(t *testing.T) {
	for said, want := range map[string]string{
		"NOAUTH Authentication required.":                                     NoAuth,
		"WRONGPASS invalid username-password pair or user is disabled.":       WrongPass,
		"WRONGKIND the resource is a lock, asked as a semaphore with LIMIT 3": "WRONGKIND the resource is a lock, asked as a semaphore with LIMIT 3",
	} {
		if why := ExplainReply(Error(said)); why != want {
			t.Errorf("%s: %s", said, why)
		}
	}
	if !strings.Contains(WrongPass, "dlock.WithCredentials") {
		t.Errorf("the Go way to give a login is not named: %s", WrongPass)
	}
}

func TestTLSFailuresNameTheCertificate(t *testing.T) {
	unknown := x509.UnknownAuthorityError{}
	if why := cannotConnect(unknown, true, time.Second); !strings.Contains(why, "not signed by a CA given") {
		t.Errorf("unknown CA: %s", why)
	}
	timeout := &net.OpError{Op: "remote error", Err: os.ErrDeadlineExceeded}
	if why := cannotConnect(timeout, true, time.Second); !strings.HasPrefix(why, "no TLS handshake within 1s") {
		t.Errorf("handshake: %s", why)
	}
	if why := cannotConnect(dial(os.ErrDeadlineExceeded), true, time.Second); strings.Contains(why, "handshake") {
		t.Errorf("a connect timeout: %s", why)
	}
}
