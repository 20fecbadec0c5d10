package dlock_test

// One suite, both drivers, each test run once: the nodes of a test are reached through the
// driver its top-level name picks (driverFor), so the suite as a whole runs on redigo and on
// go-redis in the time of one run; DLOCK_GO_DRIVER=redigo|goredis forces one for every test.
// What the seam itself must do is tested on both drivers in every run (seam_test.go, and
// errors.json, TLS and a password in their own files).

import (
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"testing"

	"dlock.dev/dlock"
)

// drivers are both drivers, in the order the both-driver tests run them.
var drivers = []dlock.Driver{dlock.Redigo, dlock.GoRedis}

var (
	picked   = map[string]dlock.Driver{}
	pickedMu sync.Mutex
)

// driverFor is t's driver: DLOCK_GO_DRIVER when set; else redigo when the FNV-1a hash of the
// top-level test's name is even, go-redis when odd. A hash rather than an alternation keeps a
// test on the same driver from run to run and whichever tests -run selects, so a failure on
// one driver is seen again by running that test alone.
func driverFor(t *testing.T) dlock.Driver {
	t.Helper()
	if forced := os.Getenv("DLOCK_GO_DRIVER"); forced != "" {
		d := dlock.Driver(forced)
		if d != dlock.Redigo && d != dlock.GoRedis {
			t.Fatalf("DLOCK_GO_DRIVER=%q: redigo or goredis", forced)
		}
		return d
	}
	name, _, _ := strings.Cut(t.Name(), "/")
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	d := drivers[h.Sum32()%2]
	pickedMu.Lock()
	defer pickedMu.Unlock()
	if _, seen := picked[name]; !seen {
		picked[name] = d
		t.Logf("driver: %s", d)
	}
	return d
}

// onBothDrivers runs test once per driver, as subtests named by the driver.
func onBothDrivers(t *testing.T, test func(t *testing.T, d dlock.Driver)) {
	for _, d := range drivers {
		d := d
		t.Run(string(d), func(t *testing.T) { test(t, d) })
	}
}

// TestTheSuiteRunsOnBothDrivers: the rule above picks each driver for a fair share of the
// suite's tests (a hash that sent them all one way would leave a driver untested).
func TestTheSuiteRunsOnBothDrivers(t *testing.T) {
	if os.Getenv("DLOCK_GO_DRIVER") != "" {
		t.Skip("DLOCK_GO_DRIVER forces one driver")
	}
	names, err := testNames()
	if err != nil {
		t.Fatal(err)
	}
	count := map[dlock.Driver]int{}
	for _, name := range names {
		h := fnv.New32a()
		_, _ = h.Write([]byte(name))
		count[drivers[h.Sum32()%2]]++
	}
	for _, d := range drivers {
		if count[d] < len(names)/4 {
			t.Errorf("%s runs %d of %d tests", d, count[d], len(names))
		}
	}
	t.Logf("%v of %d tests", count, len(names))
}

// testNames are the package's top-level tests, read from its test files.
func testNames() ([]string, error) {
	files, err := os.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		text, err := os.ReadFile(f.Name())
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(text), "\n") {
			if rest, ok := strings.CutPrefix(line, "func Test"); ok {
				names = append(names, "Test"+rest[:strings.Index(rest, "(")])
			}
		}
	}
	return names, nil
}
