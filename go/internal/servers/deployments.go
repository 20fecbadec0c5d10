package servers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Sentinels is a master and its replica with the module, watched by three sentinels that have
// a password of their own.
type Sentinels struct {
	Data      []*Server // the master first
	Sentinels []*Server
	Service   string
	Password  string // the sentinels'
}

// URL is the deployment's redis+sentinel:// URL.
func (d *Sentinels) URL() string {
	var hosts []string
	for _, s := range d.Sentinels {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", s.Port))
	}
	return "redis+sentinel://" + strings.Join(hosts, ",") + "/" + d.Service
}

// StartSentinels starts the deployment and waits until every sentinel sees the replica.
func StartSentinels(t testing.TB) *Sentinels {
	t.Helper()
	d := &Sentinels{Service: "locks", Password: "sentinel-pw-7d1"}
	d.Data = Start(t, 2, Flavour{Args: []string{"--repl-diskless-sync-delay", "0"}})
	if _, err := d.Data[1].Do("REPLICAOF", "127.0.0.1", d.Data[0].Port); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 15*time.Second, "the replica link", func() bool {
		info, _ := redis.String(d.Data[1].Do("INFO", "replication"))
		return strings.Contains(info, "master_link_status:up")
	})
	for i := 0; i < 3; i++ {
		s := New(t, FreePort(t), Flavour{NoModule: true, Password: d.Password})
		conf := filepath.Join(s.Dir, "sentinel.conf")
		lines := []string{
			fmt.Sprintf("port %d", s.Port), "bind 127.0.0.1", "dir " + s.Dir, "logfile sentinel.log",
			"requirepass " + d.Password, "sentinel sentinel-pass " + d.Password,
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2", d.Service, d.Data[0].Port),
			"sentinel down-after-milliseconds " + d.Service + " 1000", "sentinel failover-timeout " + d.Service + " 3000", "",
		}
		if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		s.cmd = exec.Command(Binary(), conf, "--sentinel")
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func(c *exec.Cmd) { _ = c.Wait() }(s.cmd)
		d.Sentinels = append(d.Sentinels, s)
	}
	Eventually(t, 20*time.Second, "the sentinels to see the replica", func() bool {
		for _, s := range d.Sentinels {
			replicas, err := redis.Values(s.Do("SENTINEL", "REPLICAS", d.Service))
			if err != nil || len(replicas) == 0 {
				return false
			}
			fields, _ := redis.StringMap(replicas[0], nil)
			if fields["flags"] != "slave" || fields["master-link-status"] != "ok" {
				return false
			}
		}
		return true
	})
	return d
}

// Cluster is a Redis Cluster of three masters and their replicas with the module, made by
// redis-cli --cluster create as an operator does it.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts it and waits until every node agrees it is whole.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0"}
	c := &Cluster{}
	taken := map[int]bool{}
	for len(c.Nodes) < 6 {
		port := 20000 + FreePort(t)%10000 // the bus port (+10000) must exist too
		if taken[port] {
			continue
		}
		taken[port] = true
		s := New(t, port, Flavour{Args: args})
		s.Spawn()
		c.Nodes = append(c.Nodes, s)
	}
	create := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		if !s.Ready(10 * time.Second) {
			t.Fatalf("cluster node %d did not start", s.Port)
		}
		create = append(create, fmt.Sprintf("127.0.0.1:%d", s.Port))
	}
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	Eventually(t, 30*time.Second, "the cluster", func() bool {
		for _, s := range c.Nodes {
			info, _ := redis.String(s.Do("CLUSTER", "INFO"))
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return false
			}
			repl, _ := redis.String(s.Do("INFO", "replication"))
			if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				return false
			}
			slots, _ := redis.Values(s.Do("CLUSTER", "SLOTS"))
			if len(slots) != 3 {
				return false
			}
			for _, r := range slots {
				if rr, _ := redis.Values(r, nil); len(rr) < 4 {
					return false
				}
			}
		}
		return true
	})
	return c
}

// Holders are the master serving slot and its replica.
func (c *Cluster) Holders(t testing.TB, slot int) (master, replica *Server) {
	t.Helper()
	ranges, err := redis.Values(c.Nodes[0].Do("CLUSTER", "SLOTS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		rr, _ := redis.Values(r, nil)
		lo, _ := redis.Int(rr[0], nil)
		hi, _ := redis.Int(rr[1], nil)
		if slot < lo || slot > hi {
			continue
		}
		port := func(v interface{}) int { a, _ := redis.Values(v, nil); p, _ := redis.Int(a[1], nil); return p }
		return c.ByPort(port(rr[2])), c.ByPort(port(rr[3]))
	}
	t.Fatalf("slot %d is not served", slot)
	return nil, nil
}

// ByPort is the node on port.
func (c *Cluster) ByPort(port int) *Server {
	for _, s := range c.Nodes {
		if s.Port == port {
			return s
		}
	}
	return nil
}
