package dev.dlock.testkit;

import java.util.ArrayList;
import java.util.List;

/** N module servers on free ports, closed together. */
public record Quorum(List<RedisProcess> servers) implements AutoCloseable {
    public static Quorum start(int n) {
        List<RedisProcess> s = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                s.add(RedisProcess.start(RedisProcess.Flavour.plain()));
            }
        } catch (RuntimeException e) {
            s.forEach(RedisProcess::close);
            throw e;
        }
        return new Quorum(List.copyOf(s));
    }

    public List<String> urls() {
        return servers.stream().map(RedisProcess::url).toList();
    }

    public RedisProcess get(int i) {
        return servers.get(i);
    }

    @Override
    public void close() {
        servers.forEach(RedisProcess::close);
    }
}
