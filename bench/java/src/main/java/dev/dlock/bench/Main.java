package dev.dlock.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java contenders of `make bench` / `make bench-java` (docs/bench/java.md) and of
 * `make bench-multi`: runs one scenario with one subject and prints one JSON line, with the same
 * arguments and output as bench/harness/redlock.mjs and the Go harness.
 *
 * <p>Usage: run.sh dlock|dlock-token|rlock|fair|fenced --nodes URL,URL --scenario
 * latency|throughput|contention|dies|multi --n N --concurrency C --duration-ms D --prefix P
 * [--ttl-ms T --k K --hold-ms H --cluster 1]
 *
 * <p>Each process warms its JVM first (untimed acquire+release cycles on keys of its own: up to
 * 10,000 or 8 s before the latency scenario, 1,000 or 1.5 s before the others;
 * Scenarios.warm says why): a Java service runs warm. The Node harnesses warm too
 * (bench/harness/warm.mjs); Python and Go have no JIT to warm.
 */
public final class Main {
    private static final AtomicLong SINK = new AtomicLong();

    /** Keeps a token read (the JIT cannot drop the read). */
    static void sink(long token) {
        SINK.addAndGet(token);
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 1) {
            System.err.println("usage: run.sh dlock|dlock-token|rlock|fair|fenced --nodes ... --scenario ...");
            System.exit(2);
        }
        Map<String, String> args = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        }
        List<String> urls = Arrays.asList(args.getOrDefault("nodes", "redis://127.0.0.1:6379").split(","));
        Plan plan = new Plan(
                Integer.parseInt(args.getOrDefault("n", "200")),
                Integer.parseInt(args.getOrDefault("concurrency", "1")),
                Long.parseLong(args.getOrDefault("duration-ms", "2000")),
                args.getOrDefault("prefix", "bench-java"),
                Long.parseLong(args.getOrDefault("ttl-ms", "10000")),
                Integer.parseInt(args.getOrDefault("k", "2")),
                Long.parseLong(args.getOrDefault("hold-ms", "1")));
        String scenario = args.getOrDefault("scenario", "latency");
        boolean cluster = "1".equals(args.get("cluster"));
        String out;
        try (Subject subject = open(argv[0], urls, cluster)) {
            if (!scenario.equals("multi")) {
                Scenarios.warm(subject, plan.prefix(), scenario);
            }
            out = switch (scenario) {
                case "latency" -> Scenarios.latency(subject, plan);
                case "throughput" -> Scenarios.throughput(subject, plan);
                case "contention" -> Scenarios.contention(subject, plan);
                case "dies" -> Scenarios.dies(subject, plan);
                case "multi" -> Multi.run(subject, plan);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            };
        } catch (Exception e) {
            System.err.println(argv[0] + " " + scenario + ": " + e);
            System.exit(1);
            return;
        }
        System.out.println(out);
        System.out.flush();
        // Abandoned workers (multi) may still be blocked in a lock call: end the process now.
        System.exit(0);
    }

    /** The subject by its harness name. */
    static Subject open(String name, List<String> urls, boolean cluster) throws Exception {
        return switch (name) {
            case "rlock" -> new RedissonSubject(RedissonSubject.Kind.LOCK, urls, cluster);
            case "fair" -> new RedissonSubject(RedissonSubject.Kind.FAIR, urls, cluster);
            case "fenced" -> new RedissonSubject(RedissonSubject.Kind.FENCED, urls, cluster);
            case "dlock", "dlock-token" -> dlock(urls, name.equals("dlock-token"));
            default -> throw new IllegalArgumentException("unknown subject " + name);
        };
    }

    /** DlockSubject, loaded by name: it is compiled only once the client has LockManager. */
    private static Subject dlock(List<String> urls, boolean tokenUsed) throws Exception {
        Class<?> c;
        try {
            c = Class.forName("dev.dlock.bench.DlockSubject");
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("dlock (java) not built: java/ has no LockManager yet");
        }
        var ctor = c.getDeclaredConstructor(List.class, boolean.class);
        ctor.setAccessible(true);
        return (Subject) ctor.newInstance(urls, tokenUsed);
    }

    /** One run's parameters. */
    record Plan(int n, int concurrency, long durationMs, String prefix, long ttlMs, int k, long holdMs) {}

    /** A JSON array of numbers. */
    static String array(List<Double> values) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(String.format(java.util.Locale.ROOT, "%.1f", values.get(i)));
        }
        return b.append(']').toString();
    }

    static List<Double> list() {
        return new ArrayList<>();
    }
}
