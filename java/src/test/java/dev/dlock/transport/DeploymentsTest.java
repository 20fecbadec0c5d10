package dev.dlock.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A Redis Cluster and a Sentinel group, each as one node, against real processes. */
class DeploymentsTest {
    private static final Duration T = Duration.ofSeconds(2);

    @Test
    void aClusterRoutesAKeyToItsMaster() {
        try (Deployments.Cluster c = Deployments.cluster(); Connect connect = new Connect(Config.of(T))) {
            Url u = Url.parse(c.url());
            try (Node n = Node.open(u, connect, new Identity(new Registry(List.of(u.name())), 0))) {
                for (String key : List.of("orders:42", "{user1000}.following", "lock:{tenant-7}:jobs")) {
                    List<Object> r = n.call(T, T, List.of(List.of("SET", key, "v-" + key), List.of("DLOCK.ACQUIRE", key + ":l", "o", "10000"))).join();
                    assertEquals("OK", r.get(0));
                    int slot = Cluster.keySlot(key);
                    RedisProcess master = c.nodes().stream()
                            .filter(p -> !p.cli("CLUSTER", "COUNTKEYSINSLOT", "" + slot).strip().equals("0")).findFirst().orElseThrow();
                    assertEquals("v-" + key, master.cli("GET", key).strip());
                    String wait = n.callAlone(T, T, List.of(List.of("GET", key))).join().get(0).toString();
                    assertEquals("v-" + key, wait);
                }
                assertTrue(n.failoverManaged());
            }
        }
    }

    @Test
    void aSentinelGroupNamesItsMaster() throws Exception {
        try (Deployments.Sentinels s = Deployments.sentinels();
                Connect connect = new Connect(Config.of(T).withSentinelCredentials("", s.password()))) {
            Url u = Url.parse(s.url());
            try (Node n = Node.open(u, connect, new Identity(new Registry(List.of(u.name())), 0))) {
                List<Object> r = n.call(T, T, List.of(List.of("CONFIG", "GET", "port"), List.of("DLOCK.ACQUIRE", "s", "o", "10000"))).join();
                assertEquals(List.of("port", "" + s.master().port), r.get(0));
                assertTrue(r.get(1) instanceof Long, r.toString());
                assertTrue(n.failoverManaged());
            }
        }
    }
}
