package dlock_test

// conformance/errors.json against real servers: the class of each failure and the words of its
// message (the Rust client, the CLI, the Python and the Node clients run the same table), on
// both drivers: what users see is the same whichever they pick.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlock.dev/dlock"
	"dlock.dev/dlock/internal/servers"
)

// errorCase is one case of the table.
type errorCase struct {
	Situation string            `json:"situation"`
	Server    string            `json:"server"`
	URL       json.RawMessage   `json:"url"` // one URL, or a list of them (the nodes, in order)
	Password  *string           `json:"password"`
	TimeoutMS int               `json:"timeout_ms"`
	WaitMS    *int              `json:"wait_ms"`
	Held      json.RawMessage   `json:"held"`
	Ask       json.RawMessage   `json:"ask"`
	Resource  *string           `json:"resource"`
	TTLMS     *int              `json:"ttl_ms"`
	Config    map[string]string `json:"config"`
	Error     string            `json:"error"`
	Words     []string          `json:"words"`
	Absent    []string          `json:"absent"`
	// WithinMS: the call must end within it, however long it may wait.
	WithinMS *int `json:"within_ms"`
}

// rightPassword is the password of the `password` servers.
const rightPassword = "right-password"

// classes: each class of the table as the sentinel errors.Is tells it by.
var classes = map[string]error{
	"no_quorum":        dlock.ErrNoQuorum,
	"invalid_argument": dlock.ErrInvalidArgument,
	"contended":        dlock.ErrContended,
	"wrong_kind":       dlock.ErrWrongKind,
}

func errorCases(t *testing.T) []errorCase {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(servers.Repo(), "conformance", "errors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct{ Cases []errorCase }
	if err := json.Unmarshal(text, &table); err != nil {
		t.Fatalf("conformance/errors.json: %v", err)
	}
	return table.Cases
}

// kind is a held or asked kind as Acquire's options: "exclusive", or {"limit": k}.
func kind(t *testing.T, raw json.RawMessage) []dlock.AcquireOption {
	var semaphore struct{ Limit int }
	if len(raw) == 0 || string(raw) == `"exclusive"` || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &semaphore); err != nil || semaphore.Limit == 0 {
		t.Fatalf("a kind the runner does not know: %s", raw)
	}
	return []dlock.AcquireOption{dlock.Limit(semaphore.Limit)}
}

// serve starts the case's server (none: a port nothing listens on); its port.
func serve(t *testing.T, c errorCase) int {
	switch c.Server {
	case "none":
		return servers.FreePort(t)
	case "module":
		server := servers.Start(t, 1, servers.Flavour{})[0]
		for name, value := range c.Config {
			if _, err := server.Do("CONFIG", "SET", name, value); err != nil {
				t.Fatalf("CONFIG SET %s %s: %v", name, value, err)
			}
		}
		return server.Port
	case "password":
		flavour := servers.Flavour{Args: []string{"--requirepass", rightPassword}, Password: rightPassword}
		return servers.Start(t, 1, flavour)[0].Port
	case "tls":
		pki := servers.MakePKI(t)
		flavour := pki.TLSFlavour(t)
		flavour.Args = []string{"--tls-cert-file", pki.ServerCert, "--tls-key-file", pki.ServerKey,
			"--tls-ca-cert-file", pki.CA, "--tls-auth-clients", "no"}
		return servers.Start(t, 1, flavour)[0].Port
	}
	t.Fatalf("unknown server %q", c.Server)
	return 0
}

// asked is a case's call: how the manager is made, what is held first and what is asked.
type asked struct {
	options     []dlock.Option
	held, asked []dlock.AcquireOption
	holds       bool
	resource    string
	ttl         time.Duration
	within      time.Duration // the call ends within it (0: no bound)
}

func askedOf(t *testing.T, c errorCase) asked {
	a := asked{options: []dlock.Option{dlock.WithTimeout(time.Duration(c.TimeoutMS) * time.Millisecond)}, resource: "r", ttl: 10 * time.Second}
	if c.Resource != nil {
		a.resource = *c.Resource
	}
	if c.TTLMS != nil {
		a.ttl = time.Duration(*c.TTLMS) * time.Millisecond
	}
	if c.Password != nil {
		a.options = append(a.options, dlock.WithCredentials("", *c.Password))
	}
	a.holds, a.held, a.asked = len(c.Held) > 0, kind(t, c.Held), kind(t, c.Ask)
	if c.WithinMS != nil {
		a.within = time.Duration(*c.WithinMS) * time.Millisecond
	}
	if c.WaitMS != nil {
		a.asked = append(a.asked, dlock.Wait(time.Duration(*c.WaitMS)*time.Millisecond))
	}
	return a
}

// urlsOf is the case's nodes, {port} filled in.
func urlsOf(t *testing.T, c errorCase, port string) []string {
	var urls []string
	if err := json.Unmarshal(c.URL, &urls); err != nil {
		var one string
		if err := json.Unmarshal(c.URL, &one); err != nil {
			t.Fatalf("url is neither a URL nor a list: %s", c.URL)
		}
		urls = []string{one}
	}
	for i := range urls {
		urls[i] = strings.ReplaceAll(urls[i], "{port}", port)
	}
	return urls
}

// failure is what the call fails with (or how Connect refuses the manager); setup is what went
// wrong before it (the lock held first, or taken when it should not be).
func failure(ctx context.Context, a asked, urls []string) (err, setup error) {
	url := urls[0]
	m, err := dlock.Connect(urls, a.options...)
	if err != nil {
		return err, nil
	}
	defer m.Close()
	if a.holds {
		other, err := dlock.Connect([]string{url}, dlock.WithTimeout(time.Second), dlock.WithDriver(dlock.Redigo))
		if err != nil {
			return nil, err
		}
		defer other.Close()
		if _, err := other.Acquire(ctx, a.resource, 30*time.Second, a.held...); err != nil {
			return nil, fmt.Errorf("held first: %w", err)
		}
	}
	started := time.Now()
	lock, err := m.Acquire(ctx, a.resource, a.ttl, a.asked...)
	if took := time.Since(started); a.within > 0 && took > a.within {
		return nil, fmt.Errorf("the call took %v, more than %v: %v", took, a.within, err)
	}
	if err == nil {
		token, _ := lock.Token(ctx)
		return nil, fmt.Errorf("taken, token %d", token)
	}
	return err, nil
}

// within runs the case's call, failing the test if it gives no answer in time.
func within(t *testing.T, d time.Duration, c errorCase, urls []string, driver dlock.Driver) error {
	a := askedOf(t, c)
	a.options = append(a.options, dlock.WithDriver(driver))
	ctx := deadline(t, d)
	type answer struct{ err, setup error }
	answers := make(chan answer, 1)
	go func() {
		err, setup := failure(ctx, a, urls)
		answers <- answer{err, setup}
	}()
	select {
	case got := <-answers:
		if got.setup != nil {
			t.Fatal(got.setup)
		}
		return got.err
	case <-time.After(d):
		t.Fatalf("no answer within %v", d)
		return nil
	}
}

func TestEveryClientSaysTheSameAboutEachFailure(t *testing.T) {
	cases := errorCases(t)
	if len(cases) < 10 {
		t.Fatalf("the table has %d cases", len(cases))
	}
	for _, c := range cases {
		c := c
		t.Run(c.Situation, func(t *testing.T) {
			onBothDrivers(t, func(t *testing.T, d dlock.Driver) {
				class, ok := classes[c.Error]
				if !ok {
					t.Fatalf("a class the runner does not know: %q", c.Error)
				}
				port := strconv.Itoa(serve(t, c))
				urls := urlsOf(t, c, port)
				url := urls[0]
				err := within(t, 90*time.Second, c, urls, d) // a case waits a minute at most
				if !errors.Is(err, class) {
					t.Fatalf("not %s: %v", c.Error, err)
				}
				t.Log(err)
				fill := strings.NewReplacer("{node}", url, "{port}", port)
				for _, word := range c.Words {
					if w := fill.Replace(word); !strings.Contains(err.Error(), w) {
						t.Errorf("%q is not in %q", w, err)
					}
				}
				for _, word := range c.Absent {
					if w := fill.Replace(word); strings.Contains(err.Error(), w) {
						t.Errorf("%q is in %q", w, err)
					}
				}
			})
		})
	}
}
