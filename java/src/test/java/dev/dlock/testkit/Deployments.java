package dev.dlock.testkit;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A Sentinel group and a Redis Cluster of real processes (go/internal/servers/deployments.go). */
public final class Deployments {
    private Deployments() {}

    /** A master with the module watched by one sentinel that has a password of its own. */
    public record Sentinels(RedisProcess master, RedisProcess sentinel, String service, String password)
            implements AutoCloseable {
        /** @return the redis+sentinel:// URL */
        public String url() {
            return "redis+sentinel://127.0.0.1:" + sentinel.port + "/" + service;
        }

        @Override
        public void close() {
            sentinel.close();
            master.close();
        }
    }

    /** Starts a sentinel group and waits until its sentinel names the master. */
    public static Sentinels sentinels() throws java.io.IOException {
        String pw = "sentinel-pw-7d1";
        RedisProcess master = RedisProcess.start(RedisProcess.Flavour.plain());
        int port = RedisProcess.freePort();
        var dir = Files.createTempDirectory("dlock-java-sentinel-");
        RedisProcess s = RedisProcess.startConfig(port, dir, List.of("port " + port, "bind 127.0.0.1", "dir " + dir,
                "logfile sentinel.log", "requirepass " + pw, "sentinel monitor locks 127.0.0.1 " + master.port + " 1",
                "sentinel down-after-milliseconds locks 1000"), List.of("--no-auth-warning", "-a", pw), true);
        eventually(() -> s.cli("SENTINEL", "MASTER", "locks").contains("" + master.port), "the sentinel's master");
        return new Sentinels(master, s, "locks", pw);
    }

    /** Three masters with the module, no replicas, made by redis-cli --cluster create. */
    public record Cluster(List<RedisProcess> nodes) implements AutoCloseable {
        /** @return the redis+cluster:// URL of the first node */
        public String url() {
            return "redis+cluster://127.0.0.1:" + nodes.get(0).port;
        }

        @Override
        public void close() {
            nodes.forEach(RedisProcess::close);
        }
    }

    /** Starts a cluster and waits until every node agrees it is whole. */
    public static Cluster cluster() {
        List<RedisProcess> nodes = new ArrayList<>();
        List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        while (nodes.size() < 3) {
            int port = 20000 + RedisProcess.freePort() % 10000; // the bus port (+10000) must exist too
            nodes.add(RedisProcess.start(RedisProcess.Flavour.plain("--cluster-enabled", "yes", "--cluster-config-file",
                    "nodes.conf", "--cluster-node-timeout", "1000"), port));
            create.add("127.0.0.1:" + port);
        }
        create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        String out = RedisProcess.run(create);
        Cluster c = new Cluster(nodes);
        try {
            eventually(() -> nodes.stream().allMatch(n -> n.cli("CLUSTER", "INFO").contains("cluster_state:ok")),
                    "the cluster (" + out + ")");
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** Polls check until it holds, failing after 20 s. */
    public static void eventually(java.util.function.BooleanSupplier check, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!check.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            RedisProcess.sleep(100);
        }
    }
}
