package dev.dlock;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows who leads an election ({@link LockManager#observe}; go/election_watch.go,
 * docs/election.md): the leader first, then every change in order: nobody after a resignation
 * or an expiry nobody took over, the new leader after a takeover, the new value after a
 * proclamation. On several nodes a handoff may pass through nobody while the new grant is
 * committed. One blocked {@code DLOCK.OBSERVE} per node, on a connection of its own; a node that
 * fails is asked again after the retry pause (it may be restarting). Read the changes with
 * {@link #next()}, or hand them to a listener ({@link LockManager#observe(String, Consumer)}).
 * {@link #close} stops it; closing the manager ends it too. Thread-safe.
 */
public final class ElectionObserver implements AutoCloseable {
  /**
   * One change of who leads: the leader (empty: nobody leads), or why that is unknown
   * ({@link NoQuorumException}: too few nodes answered, the leader follows once they do;
   * {@link WrongKindException}: the name is a shared lock or a semaphore).
   *
   * @param leader who leads, when known
   * @param error why who leads is unknown (then {@code leader} is empty)
   */
  public record Change(Optional<Leader> leader, Optional<DlockException> error) {
    /** Checks both are given, and not both present. */
    public Change {
      Objects.requireNonNull(leader, "leader");
      Objects.requireNonNull(error, "error");
      if (leader.isPresent() && error.isPresent()) {
        throw new IllegalArgumentException("a change is a leader or an error, not both");
      }
    }

    static Change of(Optional<Leader> leader) {
      return new Change(leader, Optional.empty());
    }

    static Change failed(DlockException why) {
      return new Change(Optional.empty(), Optional.of(why));
    }

    /**
     * Who leads (empty: nobody).
     *
     * @throws DlockException the change's error, when who leads is unknown
     */
    public Optional<Leader> leaderOrThrow() {
      if (error.isPresent()) {
        throw error.get();
      }
      return leader;
    }
  }

  // What next() takes: a change, or END (the observer or its manager closed).
  private static final Object END = new Object();

  private final String name;
  private final LinkedBlockingQueue<Object> changes = new LinkedBlockingQueue<>();
  private final ElectionWatch watch;
  private volatile boolean closed; // by close(), as opposed to by the manager

  ElectionObserver(Backend b, String name) {
    this.name = name;
    this.watch = new ElectionWatch(b, name, changes::add, () -> changes.add(END));
    watch.start();
  }

  /** Starts a thread handing every change to {@code listener}, in order, until closed. */
  void listen(Backend b, Consumer<Change> listener) {
    b.workers.execute(() -> {
      try {
        for (Optional<Change> c; (c = poll(-1)).isPresent(); ) {
          listener.accept(c.get());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the manager's workers are ending: so is the listener
      } catch (RuntimeException e) {
        // A listener that throws stops listening; the failure goes where a thread's would.
        close();
        Thread t = Thread.currentThread();
        t.getUncaughtExceptionHandler().uncaughtException(t, e);
      }
    });
  }

  /** The election's name. */
  public String name() {
    return name;
  }

  /**
   * The next change, waiting as long as nothing changes.
   *
   * @throws InterruptedException interrupted while waiting
   * @throws ManagerClosedException the manager was closed (the changes before it were read)
   * @throws IllegalStateException the observer was closed
   */
  public Change next() throws InterruptedException {
    return poll(-1).orElseThrow(this::ended);
  }

  /**
   * The next change, waiting at most {@code within}: empty when nothing changed by then.
   *
   * @throws InterruptedException interrupted while waiting
   * @throws ManagerClosedException the manager was closed (the changes before it were read)
   * @throws IllegalStateException the observer was closed
   */
  public Optional<Change> next(Duration within) throws InterruptedException {
    Checks.checkWait(within);
    Optional<Object> got = take(within.toNanos());
    if (got.isEmpty()) {
      return Optional.empty();
    }
    if (got.get() == END) {
      throw ended();
    }
    return Optional.of((Change) got.get());
  }

  // A change, or empty at the end; waits for good when nanos is negative.
  private Optional<Change> poll(long nanos) throws InterruptedException {
    Optional<Object> got = take(nanos);
    return got.filter(o -> o != END).map(o -> (Change) o);
  }

  private Optional<Object> take(long nanos) throws InterruptedException {
    if (closed) {
      return Optional.of(END);
    }
    Object o = nanos < 0 ? changes.take() : changes.poll(nanos, TimeUnit.NANOSECONDS);
    if (o == END) {
      changes.add(END); // every later reader sees the end too
    }
    return Optional.ofNullable(o);
  }

  private RuntimeException ended() {
    return closed ? new IllegalStateException("the observer of " + DlockException.quote(name) + " is closed")
        : new ManagerClosedException(name);
  }

  /**
   * Stops following: {@link #next()} answers no more changes. Each node's pending call ends on
   * the node's next answer (at most {@code 10 s}), on a connection of its own.
   */
  @Override
  public void close() {
    closed = true;
    watch.close();
    changes.add(END); // wakes a reader waiting now
  }
}
