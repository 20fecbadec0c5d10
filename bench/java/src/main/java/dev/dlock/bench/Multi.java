package dev.dlock.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The multi scenario of `make bench-multi` (docs/bench/multi.md): dining philosophers. Worker w
 * of W needs resources w .. w+k-1 (mod W), in that order, and takes them with the subject's call
 * for several resources (Redisson: {@code getMultiLock(...).lock()}; dlock: its set call), holds
 * them hold-ms, gives them back, again until the run ends. Workers still stuck 5 leases after the
 * end are abandoned. Prints the JSON line the Go harness's multi.go prints.
 */
final class Multi {
    private Multi() {}

    private final List<Double> waits = new ArrayList<>();
    private final List<List<Double>> done = new ArrayList<>();
    private int errors;
    private String error;

    static String run(Subject s, Main.Plan p) throws InterruptedException {
        Multi m = new Multi();
        int workers = p.concurrency();
        long start = System.nanoTime();
        long end = start + p.durationMs() * 1_000_000L;
        CountDownLatch finished = new CountDownLatch(workers);
        for (int w = 0; w < workers; w++) {
            m.done.add(new ArrayList<>());
            List<String> names = new ArrayList<>();
            for (int j = 0; j < p.k(); j++) {
                names.add(p.prefix() + ":r" + ((w + j) % workers));
            }
            int worker = w;
            Thread t = new Thread(() -> {
                try {
                    m.worker(s, p, worker, names, start, end);
                } finally {
                    finished.countDown();
                }
            }, "philosopher-" + w);
            t.setDaemon(true);
            t.start();
        }
        finished.await(end - System.nanoTime() + 5 * p.ttlMs() * 1_000_000L, TimeUnit.NANOSECONDS);
        synchronized (m) {
            StringBuilder doneJson = new StringBuilder("[");
            for (int w = 0; w < workers; w++) {
                doneJson.append(w > 0 ? "," : "").append(Main.array(m.done.get(w)));
            }
            doneJson.append(']');
            String err = m.error == null ? "" : ",\"error\":\"" + m.error.replace("\\", "\\\\").replace("\"", "'") + "\"";
            return "{\"waits_us\":" + Main.array(m.waits) + ",\"done_ms\":" + doneJson
                    + ",\"seconds\":" + p.durationMs() / 1e3 + ",\"errors\":" + m.errors + err
                    + ",\"expired\":0}";
        }
    }

    private void worker(Subject s, Main.Plan p, int w, List<String> names, long start, long end) {
        while (System.nanoTime() < end) {
            long asked = System.nanoTime();
            Subject.Held held;
            try {
                held = s.acquireAll(names, p.ttlMs(), 30_000);
            } catch (Exception e) {
                failed(e);
                sleep(10);
                continue;
            }
            long at = System.nanoTime();
            sleep(p.holdMs());
            try {
                held.release();
            } catch (Exception e) {
                failed(e);
            }
            synchronized (this) {
                if (System.nanoTime() <= end) {
                    waits.add((at - asked) / 1e3);
                    done.get(w).add((System.nanoTime() - start) / 1e6);
                }
            }
        }
    }

    private synchronized void failed(Exception e) {
        errors++;
        if (error == null) {
            error = String.valueOf(e).replace('\n', ' ');
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
