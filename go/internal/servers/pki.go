package servers

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PKI is a CA, a server certificate for 127.0.0.1 and a client certificate signed by it, made
// now with the openssl CLI (as the Node and Python suites make theirs).
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// MakePKI writes the files into a temporary directory removed when the test ends.
func MakePKI(t testing.TB) PKI {
	t.Helper()
	dir := t.TempDir()
	openssl := func(args ...string) {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	key := []string{"-newkey", "rsa:2048", "-nodes"}
	openssl(append(append([]string{"req", "-x509"}, key...), "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=dlock go test ca")...)
	if err := os.WriteFile(filepath.Join(dir, "server.ext"), []byte("subjectAltName=IP:127.0.0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server", "client"} {
		openssl(append(append([]string{"req"}, key...), "-keyout", name+".key", "-out", name+".csr", "-subj", "/CN=dlock go test "+name)...)
		args := []string{"x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-out", name + ".crt"}
		if name == "server" {
			args = append(args, "-extfile", "server.ext")
		}
		openssl(args...)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	return PKI{CA: f("ca.crt"), ServerCert: f("server.crt"), ServerKey: f("server.key"), ClientCert: f("client.crt"), ClientKey: f("client.key")}
}

// ClientTLS is what the tests' own connections present.
func (p PKI) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(p.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"}
}

// TLSFlavour: servers on a TLS port that want a client certificate.
func (p PKI) TLSFlavour(t testing.TB) Flavour {
	return Flavour{
		Listen: func(port int, _ string) []string { return []string{"--port", "0", "--tls-port", itoa(port)} },
		URL:    func(port int, _ string) string { return "rediss://127.0.0.1:" + itoa(port) },
		Args:   []string{"--tls-cert-file", p.ServerCert, "--tls-key-file", p.ServerKey, "--tls-ca-cert-file", p.CA, "--tls-auth-clients", "yes"},
		TLS:    p.ClientTLS(t),
	}
}
