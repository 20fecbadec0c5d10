package dev.dlock.manager;

import dev.dlock.LockManager;
import dev.dlock.Options;
import dev.dlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What the manager's tests share: a manager with a generous per-node timeout, and node probes. */
final class Fixtures {
    private Fixtures() {}

    /** A manager whose calls are not cut short by a loaded machine (500 ms per node). */
    static LockManager manager(List<String> urls) {
        return LockManager.connect(urls, Options.builder().timeout(Duration.ofMillis(500)).build());
    }

    /** How many times the server ran command (INFO commandstats), 0 if never. */
    static long calls(RedisProcess s, String command) {
        Matcher m = Pattern.compile("cmdstat_" + Pattern.quote(command.toLowerCase()) + ":calls=(\\d+)")
                .matcher(s.cli("INFO", "commandstats"));
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    /** A field of INFO (e.g. blocked_clients), as a number. */
    static long info(RedisProcess s, String field) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(field) + ":(\\d+)").matcher(s.cli("INFO"));
        if (!m.find()) {
            throw new AssertionError("INFO has no " + field);
        }
        return Long.parseLong(m.group(1));
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
