package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.dlock.DistributedLock;
import dev.dlock.Lease;
import dev.dlock.LockContendedException;
import dev.dlock.LockManager;
import dev.dlock.NoQuorumException;
import dev.dlock.Options;
import dev.dlock.testkit.Deployments;
import dev.dlock.testkit.Pki;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** One lock each over TLS with a CA, an ACL user, a Sentinel group and a Redis Cluster. */
@Timeout(90)
class DeploymentsLockTest {
    private static final Duration T = Duration.ofSeconds(2);

    @Test
    void overTlsWithACaAndClientCertificate() {
        Pki pki = Pki.make();
        try (RedisProcess s = RedisProcess.start(pki.flavour(true));
                LockManager m = LockManager.connect(List.of(s.url()), Options.builder().timeout(T)
                        .tlsFiles(pki.ca(), pki.clientCert(), pki.clientKey()).build())) {
            assertTrue(s.url().startsWith("rediss://"));
            Lease l = m.acquire("tls", Duration.ofSeconds(10), Duration.ofSeconds(1));
            assertTrue(l.token() > 0);
            l.release();
        } finally {
            pki.remove();
        }
    }

    @Test
    void withAnAclUserAndPassword() {
        try (RedisProcess s = RedisProcess.start(RedisProcess.Flavour.plain())) {
            s.cli("ACL", "SETUSER", "locker", "on", ">locker-pass", "~*", "+@all");
            try (LockManager m = LockManager.connect(List.of(s.url()), Options.builder().timeout(T).credentials("locker", "locker-pass").build())) {
                DistributedLock lock = m.getLock("acl");
                lock.lock();
                assertTrue(lock.token() > 0);
                lock.unlock();
            }
            try (LockManager wrong = LockManager.connect(List.of(s.url()), Options.builder().timeout(T).credentials("locker", "not-it").build())) {
                NoQuorumException e = assertThrows(NoQuorumException.class, () -> wrong.tryAcquire("acl", Duration.ofSeconds(1)));
                assertTrue(e.getMessage().contains("authentication failed"), e.getMessage());
                assertTrue(!e.getMessage().contains("not-it"), "no password in messages");
            }
        }
    }

    @Test
    void throughASentinelGroup() throws Exception {
        try (Deployments.Sentinels s = Deployments.sentinels();
                LockManager m = LockManager.connect(List.of(s.url()), Options.builder().timeout(T)
                        .sentinelCredentials("", s.password()).replicaAck(Options.ReplicaAck.OFF).build())) {
            Lease l = m.acquire("sentinel", Duration.ofSeconds(10), Duration.ofSeconds(1));
            assertTrue(s.master().cli("DLOCK.STATUS", "sentinel").contains(l.owner()));
            l.release();
        }
    }

    @Test
    void throughARedisCluster() {
        try (Deployments.Cluster c = Deployments.cluster();
                LockManager m = LockManager.connect(List.of(c.url()), Options.builder().timeout(T)
                        .replicaAck(Options.ReplicaAck.OFF).build());
                LockManager other = LockManager.connect(List.of(c.url()), Options.builder().timeout(T)
                        .replicaAck(Options.ReplicaAck.OFF).build())) {
            for (String key : List.of("orders:42", "{user1000}.following")) {
                Lease l = m.tryAcquire(key, Duration.ofSeconds(10));
                assertThrows(LockContendedException.class, () -> other.tryAcquire(key, Duration.ofSeconds(10)));
                long holders = c.nodes().stream().filter(p -> p.cli("DLOCK.STATUS", key).contains(l.owner())).count();
                assertEquals(1, holders, "held on the master of its slot");
                l.release();
            }
        }
    }
}
