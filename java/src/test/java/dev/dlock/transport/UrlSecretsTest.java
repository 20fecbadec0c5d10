package dev.dlock.transport;

import static org.junit.jupiter.api.Assertions.*;

import dev.dlock.*;
import dev.dlock.testkit.Quorum;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.*;

/**
 * What a URL may show (never its password, nor a userinfo without a colon, which Lettuce reads
 * as a password), what it may not hold (a #fragment), and one server given twice: from the
 * adversary's repros (docs/java.md, docs/connecting.md).
 */
@Timeout(60)
class UrlSecretsTest {
    static Quorum q;

    @BeforeAll
    static void start() {
        q = Quorum.start(3);
    }

    @AfterAll
    static void stop() {
        q.close();
    }

    @Test
    void fragmentIsRefusedAsABadUrl() {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> LockManager.connect(List.of("redis://127.0.0.1:6379#frag")));
        assertEquals("node URL \"redis://127.0.0.1:6379#frag\": a fragment (#...) is not supported: a node URL ends with its path or query",
                e.getMessage());
        assertThrows(InvalidArgumentException.class, () -> LockManager.connect(List.of("redis+sentinel://h:26379/m#x")));
        assertThrows(InvalidArgumentException.class, () -> LockManager.connect(List.of("unix:///tmp/x.sock#x")));
    }

    @Test
    void userOnlyUserinfoIsHidden() {
        try (LockManager m = LockManager.connect(List.of("redis://S3cret@h:1", "redis://u:S3cret@h:2"))) {
            assertEquals(List.of("redis://***@h:1", "redis://u:***@h:2"), m.nodes());
        }
    }

    /** Same server twice: localhost vs 127.0.0.1, trailing slash, db=0. */
    @Test
    void sameNodeTwice() {
        int p = q.get(0).port;
        List<List<String>> lists = List.of(
                List.of("redis://127.0.0.1:" + p, "redis://localhost:" + p, q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "/", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "?db=0", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "/0", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "REDIS://127.0.0.1:" + p, q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://127.0.0.1:" + p + "?db=1", q.get(1).url()),
                List.of("redis://127.0.0.1:" + p, "redis://[::ffff:127.0.0.1]:" + p, q.get(1).url()));
        for (List<String> urls : lists) {
            String r;
            try (LockManager m = LockManager.connect(urls, Options.builder().timeout(Duration.ofMillis(500)).build())) {
                DistributedLock l = m.getLock("twice");
                try {
                    r = "tryLock " + l.tryLock();
                    l.unlock();
                } catch (Throwable e) {
                    r = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
                DistributedLock l2 = m.getLock("twice2");
                long t0 = System.nanoTime();
                try {
                    l2.lock();
                    r += " | lock held";
                    l2.unlock();
                } catch (Throwable e) {
                    r += " | lock " + e.getClass().getSimpleName() + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms";
                }
            } catch (Throwable e) {
                r = "connect " + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            System.out.println("twice " + urls.subList(0, 2) + " -> " + r);
            assertFalse(r.startsWith("tryLock true"), "one server counted twice: " + urls + " " + r);
        }
    }

    /** A password-only userinfo (redis://PASSWORD@host, Lettuce's own form) is shown nowhere: messages, nodes(), toString. */
    @Test
    void passwordsNeverShown() throws Exception {
        String pw = "S3cretPW";
        int p = q.get(0).port;
        List<String> bad = List.of(
                "redis://u:" + pw + "@127.0.0.1:99999", "redis://u:" + pw + "@127.0.0.1:-1", "redis://u:" + pw + "@[::1",
                "redis://u:" + pw + "@127.0.0.1:1?foo=bar", "redis://u:" + pw + "@127.0.0.1:1?db=x", "http://u:" + pw + "@h:1",
                "redis://u:" + pw + "%zz@h:1", "redis://u:" + pw + "@h:1 x", "redis+sentinel://u:" + pw + "@h:1",
                "redis+sentinel://u:" + pw + "@h:1/m?db=2", "unix://u:" + pw + "@/tmp/x.sock?foo=1", "redis://u:" + pw + "@h:1#frag",
                "redis://u:" + pw + "@h:1/99x", "redis://u:" + pw + "@", "redis://" + pw + "@h:abc", "redis://" + pw + "@h:1", "rediss+cluster://u:" + pw + "@h:1/3",
                "redis://u:" + pw + "@127.0.0.1:" + p, "redis://u:" + pw + "@127.0.0.1:" + p);
        List<String> leaks = new ArrayList<>();
        for (int i = 0; i < bad.size(); i++) {
            List<String> urls = i == bad.size() - 2 ? List.of(bad.get(i), bad.get(i + 1)) : List.of(bad.get(i));
            try (LockManager m = LockManager.connect(urls, Options.builder().timeout(Duration.ofMillis(300)).build())) {
                String s = m.nodes() + " " + m.options() + " " + m.getLock("pw") + " " + m;
                if (s.contains(pw)) leaks.add("toString " + urls + ": " + s);
                try {
                    DistributedLock l = m.getLock("pw");
                    l.tryLock();
                    s = l.toString() + l.lease().map(Object::toString).orElse("");
                    if (s.contains(pw)) leaks.add("lease " + s);
                    l.unlock();
                } catch (Throwable e) {
                    check(e, pw, leaks, urls);
                }
            } catch (Throwable e) {
                check(e, pw, leaks, urls);
            }
            if (i == bad.size() - 2) break;
        }
        // a real server with a wrong password
        try (LockManager m = LockManager.connect(List.of(q.get(0).url()), Options.builder().timeout(Duration.ofMillis(300)).credentials("default", pw).build())) {
            String s = m.options().toString();
            if (s.contains(pw)) leaks.add("options " + s);
            try { m.getLock("pw").tryLock(); } catch (Throwable e) { check(e, pw, leaks, List.of("login")); }
        }
        System.out.println("password leaks: " + leaks);
        assertTrue(leaks.isEmpty(), leaks.toString());
    }

    static void check(Throwable e, String pw, List<String> leaks, List<String> urls) {
        System.out.println("pw probe " + urls.get(0).replace(pw, "***") + " -> " + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace(pw, "<<LEAK>>"));
        for (Throwable t = e; t != null; t = t.getCause()) {
            java.io.StringWriter sw = new java.io.StringWriter();
            t.printStackTrace(new java.io.PrintWriter(sw));
            if (String.valueOf(t.getMessage()).contains(pw) || t.toString().contains(pw) || sw.toString().contains(pw)) {
                leaks.add(urls.get(0).replace(pw, "***") + " -> " + t.getClass().getName());
                return;
            }
        }
    }
}
