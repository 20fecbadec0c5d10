package dev.dlock.examples;

import dev.dlock.DistributedLock;
import dev.dlock.LockManager;
import java.util.List;

/** docs/java.md's program: one lock on the 5 masters of `make cluster`, its token passed on. */
public class Quickstart {
    public static void main(String[] args) {
        List<String> nodes = args.length > 0 ? List.of(args) : List.of("redis://127.0.0.1:7001",
                "redis://127.0.0.1:7002", "redis://127.0.0.1:7003", "redis://127.0.0.1:7004", "redis://127.0.0.1:7005");
        try (LockManager locks = LockManager.connect(nodes)) {
            DistributedLock lock = locks.getLock("nightly-report");
            lock.lock(); // waits its turn (queued on the nodes); a watchdog keeps it while held
            try {
                System.out.println("nightly-report held under token " + lock.token());
            } finally {
                lock.unlock();
            }
        }
    }
}
