package dev.dlock.manager;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.dlock.DistributedLock;
import dev.dlock.LockManager;
import dev.dlock.Options;
import dev.dlock.testkit.Quorum;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * 10,000 virtual threads contend on one lock through one manager: each lock()/unlock() of its
 * own handle, exclusion checked inside, the tokens rising; local waits keep the server-side waits
 * at one per node however many threads wait.
 */
@Timeout(300)
class VirtualThreadsTest {
    private static final int THREADS = 10_000;

    @Test
    void tenThousandVirtualThreadsTakeTurnsOnOneLock() throws Exception {
        try (Quorum q = Quorum.start(3); LockManager locks = LockManager.connect(q.urls(),
                Options.builder().timeout(Duration.ofSeconds(1)).build())) {
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger overlaps = new AtomicInteger();
            AtomicLong lastToken = new AtomicLong();
            AtomicInteger falling = new AtomicInteger();
            AtomicInteger arrived = new AtomicInteger();
            DistributedLock holder;
            try (LockManager elsewhere = LockManager.connect(q.urls(), Options.builder().timeout(Duration.ofSeconds(1)).build())) {
                holder = elsewhere.getLock("vthreads");
                holder.lock(); // held elsewhere while the 10,000 arrive: every one of them waits
            List<Future<?>> done = new ArrayList<>();
            try (ExecutorService vthreads = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < THREADS; i++) {
                    done.add(vthreads.submit(() -> {
                        DistributedLock lock = locks.getLock("vthreads");
                        arrived.incrementAndGet();
                        lock.lock();
                        try {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            long t = lock.token();
                            if (t <= lastToken.getAndSet(t)) {
                                falling.incrementAndGet();
                            }
                            inside.decrementAndGet();
                        } finally {
                            lock.unlock();
                        }
                    }));
                }
                while (arrived.get() < THREADS) {
                    Thread.sleep(20);
                }
                Thread.sleep(500); // long enough for a second server-side wait to show, were there one
                for (RedisProcess s : q.servers()) {
                    assertEquals(1, blocked(s), "server-side waits on " + s.url() + " with " + THREADS + " threads waiting");
                }
                holder.unlock();
                for (Future<?> f : done) {
                    f.get();
                }
            }
            }
            assertEquals(0, overlaps.get(), "two holders at once");
            assertEquals(0, falling.get(), "a token that did not rise");
            System.out.println("VirtualThreadsTest: " + THREADS + " virtual threads served in turn; one blocked connection per node while they waited");
        }
    }

    private static int blocked(RedisProcess s) {
        Matcher m = Pattern.compile("(?m)^blocked_clients:(\\d+)").matcher(s.cli("INFO", "clients"));
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }
}
