package dev.dlock.examples;

import dev.dlock.Lease;
import dev.dlock.LockManager;
import dev.dlock.Resource;
import dev.dlock.ResourceSet;
import java.time.Duration;
import java.util.List;

/** docs/java.md's sets program: two accounts and a reader's hold on the ledger, all or nothing. */
public class Transfer {
    public static void main(String[] args) {
        try (LockManager locks = LockManager.connect(List.of(args))) {
            ResourceSet set = ResourceSet.of(Resource.exclusive("accounts:1"), Resource.exclusive("accounts:2"),
                    Resource.shared("ledger"));
            // Every resource or none, one token for the set; queued on all three at once meanwhile.
            Lease lease = locks.acquireAll(set, Duration.ofSeconds(10), Duration.ofMinutes(1));
            try {
                long token = lease.token(); // committed on a quorum, on every resource of the set
                System.out.println("moved 10 from accounts:1 to accounts:2 under token " + token);
            } finally {
                lease.release();
            }
        }
    }
}
