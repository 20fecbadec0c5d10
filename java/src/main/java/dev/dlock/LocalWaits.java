package dev.dlock;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Many local waiters, few server waits (client/src/local_waits.rs, node/src/localWaits.ts;
 * docs/waiting.md): a queued wait holds a blocked connection on every node, so a thousand threads
 * of one process waiting for one resource would hold a thousand on each. One manager therefore
 * keeps at most one server-side wait per resource: the other callers queue here, first come
 * first served (a fair semaphore), and each takes its turn on the nodes when the one before it
 * is granted or gives up. The turn covers the wait only, never the hold: a granted caller hands
 * it on at once, so shared holds and semaphore permits are still granted together. Sets and
 * election campaigns do not use it.
 */
final class LocalWaits {
  private final Map<String, Queue> queues = new HashMap<>(); // guarded by itself

  // One resource's queue: its one turn, and how many callers wait for it or hold it.
  private static final class Queue {
    final Semaphore turn = new Semaphore(1, true);
    int users;
  }

  /** The right to wait on the nodes for one resource; handed to the next caller by {@link #close}. */
  final class Turn implements AutoCloseable {
    private final String resource;
    private final Queue queue;
    private boolean closed;

    private Turn(String resource, Queue queue) {
      this.resource = resource;
      this.queue = queue;
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        queue.turn.release();
        leave(resource, queue);
      }
    }
  }

  /**
   * Waits up to {@code left} for {@code resource}'s turn: empty when the time ran out first.
   * {@code interruptible}: an interrupt ends the wait (InterruptedException); otherwise it is
   * kept, set again on return.
   */
  Optional<Turn> turn(String resource, Duration left, boolean interruptible) throws InterruptedException {
    Queue q;
    synchronized (queues) {
      q = queues.computeIfAbsent(resource, r -> new Queue());
      q.users++;
    }
    boolean granted = false;
    boolean interrupted = false;
    long until = System.nanoTime() + left.toNanos();
    try {
      while (true) {
        try {
          if (q.turn.tryAcquire(Math.max(until - System.nanoTime(), 0), TimeUnit.NANOSECONDS)) {
            granted = true; // the turn's now: it leaves on close
            return Optional.of(new Turn(resource, q));
          }
          return Optional.empty();
        } catch (InterruptedException e) {
          if (interruptible) {
            throw e;
          }
          interrupted = true;
        }
      }
    } finally {
      if (!granted) {
        leave(resource, q);
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  // A caller done with the queue: an idle queue is forgotten.
  private void leave(String resource, Queue q) {
    synchronized (queues) {
      if (--q.users == 0) {
        queues.remove(resource, q);
      }
    }
  }

  /** How many resources have callers waiting or on the nodes (for tests). */
  int resources() {
    synchronized (queues) {
      return queues.size();
    }
  }
}
