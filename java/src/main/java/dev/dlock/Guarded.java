package dev.dlock;

import dev.dlock.transport.RedisError;
import java.util.ArrayList;
import java.util.List;

/**
 * Guarded writes (go/guarded.go, client/src/guarded.rs): a command sent to the data's Redis
 * wrapped in {@code DLOCK.GUARD gate token ...}, so the data refuses it once a newer holder has
 * written (docs/fencing.md). A {@code STALE} reply marks the lease lost: a newer holder exists,
 * whatever the lease says.
 */
final class Guarded {
  private Guarded() {}

  static Object run(Lease lease, DataConnection data, String gate, List<String> command) {
    if (lease.isLost() || lease.isReleased()) {
      throw new LockLostException(lease.resource()); // known lost: not even a first write goes
    }
    long token = lease.token(); // a commit owed is paid first
    List<String> wrapped = new ArrayList<>(command.size() + 3);
    wrapped.add("DLOCK.GUARD");
    wrapped.add(gate);
    wrapped.add(Long.toUnsignedString(token));
    wrapped.addAll(command);
    Object reply = data.send(wrapped);
    if (reply instanceof RedisError e) {
      if (e.text().startsWith("STALE")) {
        StaleTokenException stale = new StaleTokenException(lease.resource(), gate, token);
        lease.lose(stale);
        throw stale;
      }
      throw new DlockException("lock " + DlockException.quote(lease.resource()) + ": the guarded write through gate "
          + DlockException.quote(gate) + " failed on " + data.name() + ": " + e.text());
    }
    return reply;
  }
}
