package dev.dlock;

import dev.dlock.Backend.Answer;
import dev.dlock.ElectionObserver.Change;
import dev.dlock.ElectionRule.Seen;
import dev.dlock.ElectionRule.Verdict;
import dev.dlock.ElectionRule.View;
import dev.dlock.transport.Ack;
import dev.dlock.transport.NodeFailure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Following an election (go/election_watch.go, client/src/election_watch.rs; docs/election.md):
 * each node is asked {@code DLOCK.OBSERVE name AFTER token OWNER owner}, which it answers when its
 * holder differs from the one named (or the holder's lease ends), so nobody polls. Each node's
 * loop is a chain of Lettuce futures, one blocked call at a time on a connection of its own
 * ({@link Backend#call} with a blocking time); no thread waits. The answers meet here, under
 * this object's lock: what each node holds, and the leader (by {@link ElectionRule}) handed on
 * each time it changes, in order.
 */
final class ElectionWatch {
  /**
   * How long one DLOCK.OBSERVE may block on a node before it is asked again. It also bounds how
   * long a node's loop outlives its observer: a blocked call cannot be taken back, so the loop
   * ends when the node answers.
   */
  static final Duration OBSERVE_FOR = Duration.ofSeconds(10);

  /**
   * How long a new leader whose epoch no majority shows yet is held back: a grant being committed
   * shows each node's own token for the moment its FENCE takes, then the epoch on a majority, so
   * sending it at once would send one takeover twice. With committed nodes down it stays so, and
   * is sent after this (Go's commitGrace, Rust's COMMIT_GRACE).
   */
  static final Duration COMMIT_GRACE = Duration.ofMillis(250);

  private final Backend b;
  private final String name;
  private final int needed;
  private final Consumer<Change> out; // called under this object's lock, in order
  private final Runnable ended; // every node's loop ended (the manager was closed)
  private volatile boolean closed;

  // Guarded by this.
  private final View[] views;
  private final NodeFailure[] failures;
  private final WrongKindException[] wrong;
  private final boolean[] heard;
  private Change shown; // null until the first change is sent
  private Change pending; // a new leader held back (null: none)
  private long holds; // the number of the current hold, so a stale grace timer does nothing
  private int running;

  ElectionWatch(Backend b, String name, Consumer<Change> out, Runnable ended) {
    this.b = b;
    this.name = name;
    this.out = out;
    this.ended = ended;
    int n = b.nodes.size();
    this.needed = Timing.majority(n);
    this.views = new View[n];
    Arrays.fill(views, View.noAnswer());
    this.failures = new NodeFailure[n];
    this.wrong = new WrongKindException[n];
    this.heard = new boolean[n];
  }

  /** Starts every node's loop: each asks for the holder at once first. */
  void start() {
    synchronized (this) {
      running = b.nodes.size();
    }
    for (int node = 0; node < b.nodes.size(); node++) {
      ask(node, null);
    }
  }

  /** Stops: nothing more is handed on; the loops end as their pending calls are answered. */
  void close() {
    synchronized (this) {
      closed = true;
      pending = null;
    }
  }

  // One DLOCK.OBSERVE: after the holder last seen (null: nothing known, answer at once).
  private void ask(int node, Seen after) {
    if (closed || b.isClosed()) {
      loopEnded();
      return;
    }
    List<String> cmd = after == null ? Commands.observe(name, OBSERVE_FOR) : Commands.observe(name, after, OBSERVE_FOR);
    // A server notices a blocked call's timeout only at its next tick: its reply may come that late.
    b.call(node, cmd, false, OBSERVE_FOR.plus(Ack.TICK))
        .thenAccept(a -> answered(node, a))
        .exceptionally(e -> {
          Thread t = Thread.currentThread();
          t.getUncaughtExceptionHandler().uncaughtException(t, e); // a bug here: say so, not silently
          return null;
        });
  }

  // Every answer is reported, even the same holder after a TIMEOUT (report drops what is no
  // change); then the node is asked again after it, or after a failure at once after a pause.
  private void answered(int node, Answer a) {
    if (closed || b.isClosed()) {
      // Not reported: the manager's close fails the calls still out, which is no news about the
      // nodes (a NoQuorum change before the end would be a false one).
      loopEnded();
      return;
    }
    Election.Heard h = Election.heard(b, name, node, a);
    report(node, h);
    if (h.failure().isEmpty()) {
      ask(node, h.view().holder().orElse(new Seen("", 0))); // free: AFTER 0 OWNER ""
      return;
    }
    // A shared lock or semaphore stays one for long: no busy asking.
    Duration pause = h.wrongKind().isPresent() ? OBSERVE_FOR : b.retryPause();
    // Not on the manager's threads: once it is closed they take no work, and this loop must
    // still run once more to see the close and end. ask only sends; it never blocks.
    CompletableFuture.delayedExecutor(pause.toNanos(), TimeUnit.NANOSECONDS).execute(() -> ask(node, null));
  }

  private synchronized void loopEnded() {
    if (--running == 0) {
      pending = null;
      ended.run();
    }
  }

  // Records a node's report; hands on the change it makes, if it is news (a new leader whose
  // epoch no majority shows yet held back until a report shows it committed, or COMMIT_GRACE).
  private synchronized void report(int node, Election.Heard h) {
    heard[node] = true;
    views[node] = h.view();
    failures[node] = h.failure().orElse(null);
    wrong[node] = h.wrongKind().orElse(null);
    if (closed) {
      return;
    }
    Optional<Change> change = view();
    if (change.isEmpty() || (shown != null && same(shown, change.get()))) {
      pending = null; // back to what was sent, as the Rust observer
    } else if (uncommitted(change.get())) {
      hold(change.get());
    } else {
      pending = null;
      send(change.get());
    }
  }

  // The change the nodes' views make; none until every node has answered once (or failed): the
  // first to answer may hold a grant whose commit is on its way to the others.
  private Optional<Change> view() {
    for (boolean h : heard) {
      if (!h) {
        return Optional.empty();
      }
    }
    Optional<Leader> before = shown == null ? Optional.empty() : shown.leader();
    Verdict v = ElectionRule.leaderView(List.of(views), needed, before);
    if (v.known()) {
      return Optional.of(Change.of(v.leader()));
    }
    List<NodeFailure> listed = new ArrayList<>();
    for (int node = 0; node < wrong.length; node++) {
      if (wrong[node] != null) {
        return Optional.of(Change.failed(wrong[node])); // a shared lock or a semaphore: say so
      }
      if (failures[node] != null) {
        listed.add(failures[node]);
      }
    }
    return Optional.of(Change.failed(new NoQuorumException(name, needed, listed)));
  }

  // A leader other than the one sent whose epoch (same id and token) is on fewer than needed
  // nodes: its grant may still be being committed.
  private boolean uncommitted(Change change) {
    if (change.leader().isEmpty()) {
      return false;
    }
    Leader l = change.leader().get();
    if (shown != null && shown.leader().map(s -> s.id().equals(l.id())).orElse(false)) {
      return false;
    }
    int on = 0;
    for (View v : views) {
      Optional<Seen> s = v.holder();
      if (s.isPresent() && s.get().token() == l.epoch() && ElectionRule.splitOwner(s.get().owner())[0].equals(l.id())) {
        on++;
      }
    }
    return on < needed;
  }

  // Keeps change back, replacing any held one; the grace runs from the first held (a newer view
  // does not push it back).
  private void hold(Change change) {
    boolean first = pending == null;
    pending = change;
    if (!first) {
      return;
    }
    long hold = ++holds;
    try {
      b.timers.schedule(() -> graceOver(hold), COMMIT_GRACE.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      pending = null; // the manager closed: its timers are gone, and the observer ends with it
    }
  }

  private synchronized void graceOver(long hold) {
    if (pending != null && hold == holds && !closed) {
      Change c = pending;
      pending = null;
      send(c);
    }
  }

  private void send(Change change) {
    shown = change;
    out.accept(change);
  }

  // The same leader (id, value, epoch), or both nobody, or both unknown.
  private static boolean same(Change a, Change b) {
    if (a.error().isPresent() || b.error().isPresent()) {
      return a.error().isPresent() && b.error().isPresent();
    }
    return a.leader().equals(b.leader());
  }
}
