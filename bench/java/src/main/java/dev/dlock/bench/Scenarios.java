package dev.dlock.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** The scenarios of `make bench` for one Java subject; each returns its JSON line. */
final class Scenarios {
    /** The uncontended locks' lease, as the other harnesses take. */
    private static final long TTL_MS = 10_000;
    /** The dying holder's lease (bench/src/expiry.rs). */
    private static final long DYING_TTL_MS = 100;

    private Scenarios() {}

    private static double micros(long fromNanos) {
        return (System.nanoTime() - fromNanos) / 1e3;
    }

    /**
     * Untimed acquire+release cycles, whichever ends first: 10,000 or 8 s before the latency
     * scenario, 1,000 or 1.5 s before the others. HotSpot compiles the per-call path fully
     * (C2) only after thousands of calls: the Java client's 5-node p50 falls from about 1.3 ms
     * over its first 1,000 cycles to about 0.7 ms after 5,000 (Redisson's on one node by a third
     * too), and a service that takes locks runs warm; the latency rows time single calls, which
     * that shows most. The other scenarios are timed over seconds of traffic that warms as it goes.
     */
    static void warm(Subject s, String prefix, String scenario) throws Exception {
        boolean latency = scenario.equals("latency");
        long end = System.nanoTime() + (latency ? 8_000_000_000L : 1_500_000_000L);
        int cycles = latency ? 10_000 : 1_000;
        for (int i = 0; i < cycles && System.nanoTime() < end; i++) {
            s.tryAcquire(prefix + ":warm:" + i, TTL_MS).release();
        }
    }

    /** {@code n} uncontended acquire+release cycles, each one's µs. */
    static String latency(Subject s, Main.Plan p) throws Exception {
        List<Double> samples = new ArrayList<>(p.n());
        for (int i = 0; i < p.n(); i++) {
            long t = System.nanoTime();
            s.tryAcquire(p.prefix() + ":" + i, TTL_MS).release();
            samples.add(micros(t));
        }
        return "{\"latencies_us\":" + Main.array(samples) + "}";
    }

    /** Runs {@code work(task, i)} on {@code concurrency} threads until the duration ends. */
    private interface Work {
        void run(int task, int i) throws Exception;
    }

    private static double onThreads(Main.Plan p, Work work) throws Exception {
        long start = System.nanoTime();
        long end = start + p.durationMs() * 1_000_000L;
        AtomicReference<Exception> first = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < p.concurrency(); t++) {
            int task = t;
            Thread thread = new Thread(() -> {
                try {
                    for (int i = 0; System.nanoTime() < end; i++) {
                        work.run(task, i);
                    }
                } catch (Exception e) {
                    first.compareAndSet(null, e);
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread t : threads) {
            t.join();
        }
        if (first.get() != null) {
            throw first.get();
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /** {@code concurrency} threads, distinct resources: acquire+release pairs per second. */
    static String throughput(Subject s, Main.Plan p) throws Exception {
        AtomicLong ops = new AtomicLong();
        double seconds = onThreads(p, (task, i) -> {
            s.tryAcquire(p.prefix() + ":" + task + ":" + i, TTL_MS).release();
            ops.incrementAndGet();
        });
        return "{\"ops\":" + ops.get() + ",\"seconds\":" + seconds + "}";
    }

    /** {@code concurrency} threads on one resource, each holding it 1 ms: the waits. */
    static String contention(Subject s, Main.Plan p) throws Exception {
        List<Double> waits = Collections.synchronizedList(new ArrayList<>());
        String key = p.prefix() + ":contended";
        double seconds = onThreads(p, (task, i) -> {
            long t = System.nanoTime();
            Subject.Held held = s.acquire(key, TTL_MS, 60_000);
            waits.add(micros(t));
            Thread.sleep(1);
            held.release();
        });
        synchronized (waits) {
            return "{\"latencies_us\":" + Main.array(waits) + ",\"ops\":" + waits.size()
                    + ",\"seconds\":" + seconds + "}";
        }
    }

    /**
     * {@code n} holders that die (a 100 ms lease, never released); a waiter asks at once. How
     * long after the holder's deadline (counted from its request) the waiter got the lock, µs.
     */
    static String dies(Subject s, Main.Plan p) throws Exception {
        List<Double> late = new ArrayList<>(p.n());
        for (int i = 0; i < p.n(); i++) {
            String key = p.prefix() + ":dies:" + i;
            long deadline = s.abandon(key, DYING_TTL_MS) + DYING_TTL_MS * 1_000_000L;
            Subject.Held next = s.acquire(key, TTL_MS, 10_000);
            long got = System.nanoTime();
            next.release();
            late.add((got - deadline) / 1e3);
        }
        return "{\"latencies_us\":" + Main.array(late) + "}";
    }
}
