package dev.dlock;

import dev.dlock.Attempt.Action;
import dev.dlock.Attempt.ActionKind;
import dev.dlock.Commands.Queued;
import dev.dlock.Replies.Policy;
import dev.dlock.Replies.Reply;
import dev.dlock.transport.NodeFailure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Takes a lock over the network (go/driver.go, client/src/driver.rs): runs attempts
 * ({@link Attempt}, every decision) by sending what their actions ask through the node calls
 * ({@link Calls}), feeding the replies back, and keeping the time. The loop runs on the caller's
 * thread (a virtual one is welcome: it only ever parks on a queue); the requests are Lettuce's
 * futures, whose answers come back through that queue.
 *
 * <ul>
 *   <li>Without a wait, one attempt that does not wait on the nodes; with one, attempts run until
 *       one holds or {@link Attempt#anotherAttempt} says stop: queued on the nodes (the default),
 *       or without a server wait and with the retry pause between attempts (retry mode).
 *   <li>Queue mode draws one ticket per acquisition; with one node no ticket (plain FIFO, and a
 *       grant that is never committed must not be revocable).
 *   <li>Round r of an attempt asks as owner {@code <base>:<r>}, each attempt under a new base, so
 *       a late RELEASE of an abandoned round cannot free a later one.
 *   <li>A queued attempt keeps the deadline itself (a node notices a wait's timeout only at its
 *       next tick) and gets at least one whole call, so a zero wait still asks once.
 *   <li>An attempt that ends without the lock (or is interrupted, when the caller allows it)
 *       withdraws its round before answering; requests still out end in the background, where
 *       {@link Attempt#onLate} says which grants they bring to release.
 * </ul>
 */
final class Driver {
  /** A one-way flag: raised once, read any time (the holder released: late grants are not its). */
  static final class Signal {
    private volatile boolean raised;

    void raise() {
      raised = true;
    }

    boolean raised() {
      return raised;
    }
  }

  /**
   * A lock won: its owner, token, end of validity (nanoTime), the signal its release raises, and
   * the nodes that granted in the round it was held (those a commit owed goes to).
   */
  record Granted(String owner, long token, long validUntil, Signal stale, List<Integer> holding) {}

  /** What a call came to: the lock, or why not; the attempts made; whether an interrupt ended it. */
  record Outcome(Granted won, AttemptError failure, int attempts, boolean interrupted) {}

  final Calls calls;
  final Duration ttl;
  final long deadline; // nanoTime
  final Policy policy;
  final long ticket;
  private final boolean interruptible;
  private boolean interrupted; // seen, whether it ends the call or is handed back after it
  // Nodes whose connection setup met a refusal waiting cannot cure: not connected to again within
  // this call, their refusal the answer to every ask.
  final Map<Integer, NodeFailure> fin = new HashMap<>();

  Driver(Calls calls, Duration ttl, Duration wait, Policy policy, boolean interruptible) {
    this.calls = calls;
    this.ttl = ttl;
    this.deadline = System.nanoTime() + wait.toNanos();
    this.policy = policy;
    this.interruptible = interruptible;
    this.ticket = policy.queue() && calls.b.nodes.size() > 1 ? Timing.drawTicket() : 0;
  }

  /**
   * Makes attempts until one holds (at most one when {@code once}). An interrupt ends the call
   * when interruptible (the round withdrawn first); otherwise it is kept and set again on return.
   */
  Outcome run(boolean once) {
    try {
      return attempts(once);
    } finally {
      if (interrupted && !interruptible) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private Outcome attempts(boolean once) {
    Backend b = calls.b;
    for (int attempts = 1; ; attempts++) {
      Optional<AttemptError> refused = refused();
      if (refused.isPresent()) {
        return new Outcome(null, refused.get(), attempts, false);
      }
      Running r = new Running(this, Timing.newOwner());
      Running.Result res = r.run();
      if (res.won() != null) {
        b.meetAll(b.options.timeout()); // a manager's first lock only
        refused = refused();
        if (refused.isPresent()) {
          res.won().stale().raise();
          calls.release(res.won().owner(), reachable(b.everywhere())).join();
          return new Outcome(null, refused.get(), attempts, false);
        }
        return new Outcome(res.won(), null, attempts, false);
      }
      refused = refused();
      if (refused.isPresent()) {
        return new Outcome(null, refused.get(), attempts, false); // no other attempt can change it
      }
      Duration pause = b.retryPause();
      boolean outOfTime = System.nanoTime() + pause.toNanos() - deadline > 0;
      if (once || cancelled() || !Attempt.anotherAttempt(policy, res.failure(), outOfTime, attempts, b.options.retryCount())) {
        return new Outcome(null, res.failure(), attempts, cancelled());
      }
      if (!sleep(pause)) {
        return new Outcome(null, res.failure(), attempts, true);
      }
    }
  }

  // The retry pause; false when an interrupt ends the call.
  private boolean sleep(Duration pause) {
    try {
      Thread.sleep(pause.toMillis(), pause.toNanosPart() % 1_000_000);
    } catch (InterruptedException e) {
      interrupted = true;
    }
    return !cancelled();
  }

  /** Whether an interrupt ends the call. */
  boolean cancelled() {
    return interrupted && interruptible;
  }

  /** Parks for the next input (up to {@code nanos}, or for good when negative). */
  Running.Input await(LinkedBlockingQueue<Running.Input> inputs, long nanos) {
    try {
      return nanos < 0 ? inputs.take() : inputs.poll(nanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      interrupted = true;
      return null;
    }
  }

  // Every acquisition fails once two nodes turned out to reach one server.
  private Optional<AttemptError> refused() {
    String why = calls.b.refusal();
    if (why.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(AttemptError.raised(AttemptError.Kind.INVALID_ARGUMENT, new InvalidArgumentException(why)));
  }

  /** {@code nodes} but those refused for the call. */
  List<Integer> reachable(List<Integer> nodes) {
    return Refusals.reachable(nodes, fin.keySet());
  }

  /** The server-side wait of an ask now: what is left of the deadline, and the ticket. */
  Optional<Queued> queued() {
    if (!policy.queue()) {
      return Optional.empty();
    }
    return Optional.of(new Queued(Duration.ofNanos(Math.max(deadline - System.nanoTime(), 0)), ticket));
  }

  /**
   * The lease a hold comes to ({@link Attempt#lease}), counted from the request that last set
   * its TTL: the lock, or empty (its round released before answering).
   */
  Optional<Granted> lease(String owner, long token, long leaseFrom, Signal stale, List<Integer> holding) {
    Backend b = calls.b;
    int n = b.nodes.size();
    Optional<Duration> left = b.validity(ttl, leaseFrom);
    Attempt.Lease verdict = Attempt.lease(n, left, ttl, false);
    if (verdict == Attempt.Lease.RENEW) {
      long renewedFrom = System.nanoTime();
      left = calls.renew(0, owner, ttl).join() ? b.validity(ttl, renewedFrom) : Optional.empty();
      verdict = Attempt.lease(n, left, ttl, true);
    }
    if (verdict == Attempt.Lease.HELD) {
      return Optional.of(new Granted(owner, token, System.nanoTime() + left.orElseThrow().toNanos(), stale, holding));
    }
    stale.raise();
    calls.release(owner, reachable(b.everywhere())).join(); // before answering, as any failure
    return Optional.empty();
  }

  /** One attempt while its requests are out. */
  static final class Running {
    /** One thing that came back: a reply to an ask, to a commit, or a pause's end. */
    record Input(ActionKind kind, int node, int round, Reply reply, Optional<NodeFailure> failure) {}

    record Result(Granted won, AttemptError failure) {}

    private final Driver d;
    private final String base;
    private final Signal stale = new Signal();
    private final LinkedBlockingQueue<Input> inputs = new LinkedBlockingQueue<>();
    private final Attempt core;
    private final List<Action> initial;
    private long leaseFrom = System.nanoTime();
    private int out; // requests and pauses not back yet (guarded by this)
    private boolean over; // guarded by this

    Running(Driver d, String base) {
      this.d = d;
      this.base = base;
      Attempt.Started s = Attempt.start(d.calls.b.nodes.size(), d.calls.b.needed(d.calls.kind), d.policy);
      this.core = s.attempt();
      this.initial = s.actions();
    }

    Result run() {
      List<Action> actions = initial;
      // A queued attempt gets at least one whole call, so a zero wait still asks once and hears it.
      long endAt = Math.max(d.deadline, System.nanoTime() + d.calls.b.options.timeout().toNanos());
      try {
        while (true) {
          Optional<Result> done = perform(actions);
          if (done.isPresent()) {
            return done.get();
          }
          actions = next(endAt);
        }
      } finally {
        end();
      }
    }

    private String owner(int round) {
      return Timing.roundOwner(base, round);
    }

    // The attempt is over: replies that came in and were not fed go to onLate, as later ones do.
    private void end() {
      List<Action> late = new ArrayList<>();
      synchronized (this) {
        if (over) {
          return;
        }
        over = true;
        for (Input in; (in = inputs.poll()) != null; ) {
          if (in.kind() == ActionKind.ASK) {
            late.addAll(core.onLate(in.node(), in.round(), in.reply(), stale.raised()));
          }
        }
      }
      releaseLate(late);
    }

    private void releaseLate(List<Action> late) {
      for (Action act : late) {
        d.calls.release(owner(act.round()), act.nodes());
      }
    }

    private Optional<Result> perform(List<Action> actions) {
      boolean failing = actions.stream().anyMatch(a -> a.kind() == ActionKind.FAILED);
      for (Action act : actions) {
        switch (act.kind()) {
          case ASK -> {
            leaseFrom = System.nanoTime();
            act.nodes().forEach(n -> ask(n, act.round()));
          }
          case ASK_AGAIN -> {
            if (act.afterPause()) {
              pause(act.node(), act.round());
            } else {
              ask(act.node(), act.round());
            }
          }
          case FENCE -> {
            if (d.policy.queue()) {
              leaseFrom = System.nanoTime(); // FENCE ... PX starts the lease afresh
            }
            act.nodes().forEach(n -> fence(n, act.round(), act.token()));
          }
          case RELEASE -> {
            CompletableFuture<Calls.Tally> r = d.calls.release(owner(act.round()), d.reachable(act.nodes()));
            if (failing) {
              r.join(); // the round is withdrawn before the call answers
            }
          }
          case HELD -> {
            end(); // the machine's grants stay as they were: the holding nodes
            Optional<Granted> won = d.lease(owner(act.round()), act.token(), leaseFrom, stale, core.grantedNodes());
            return Optional.of(won.map(w -> new Result(w, null))
                .orElseGet(() -> new Result(null, AttemptError.of(AttemptError.Kind.VALIDITY_EXPIRED))));
          }
          case FAILED -> {
            AttemptError err = told(act.error().orElseThrow());
            end(); // the core withdrew the round just before
            return Optional.of(new Result(null, err));
          }
        }
      }
      return Optional.empty();
    }

    // An attempt ended by refusals for the call names every node known to have failed.
    private AttemptError told(AttemptError err) {
      if (!err.isFinal()) {
        return err;
      }
      List<NodeFailure> more = new ArrayList<>();
      for (Input in : inputs) {
        if (in.kind() == ActionKind.ASK) {
          in.reply().failure().ifPresent(more::add);
        }
      }
      List<String> names = d.calls.b.nodes.stream().map(n -> n.name()).toList();
      return new AttemptError(err.kind(), Refusals.told(err.failures(), more, names), true, err.raised());
    }

    // Runs a request; its answer goes to the attempt, or once it is over, to onLate.
    private void track(CompletableFuture<Input> request, ActionKind kind, int node, int round) {
      synchronized (this) {
        out++;
      }
      request.whenComplete((in, err) -> {
        Input got = in != null ? in : new Input(kind, node, round,
            Reply.failed(NodeFailure.of(d.calls.b.nodes.get(node).name(), "unexpected failure: " + err)),
            Optional.of(NodeFailure.of(d.calls.b.nodes.get(node).name(), "unexpected failure: " + err)));
        List<Action> late = List.of();
        synchronized (this) {
          out--;
          if (!over) {
            inputs.add(got);
            return;
          }
          if (got.kind() == ActionKind.ASK) {
            late = core.onLate(got.node(), got.round(), got.reply(), stale.raised());
          }
        }
        releaseLate(late);
      });
    }

    private void ask(int node, int round) {
      NodeFailure refused = d.fin.get(node);
      if (refused != null) {
        track(CompletableFuture.completedFuture(new Input(ActionKind.ASK, node, round, Reply.failed(refused),
            Optional.empty())), ActionKind.ASK, node, round);
        return;
      }
      track(d.calls.ask(node, owner(round), d.ttl, d.queued())
          .thenApply(r -> new Input(ActionKind.ASK, node, round, r, Optional.empty())), ActionKind.ASK, node, round);
    }

    private void pause(int node, int round) {
      Duration pause = d.calls.b.retryPause();
      track(CompletableFuture.supplyAsync(() -> new Input(ActionKind.ASK_AGAIN, node, round, Reply.nil(), Optional.empty()),
          CompletableFuture.delayedExecutor(pause.toNanos(), TimeUnit.NANOSECONDS, d.calls.b.workers)),
          ActionKind.ASK_AGAIN, node, round);
    }

    private void fence(int node, int round, long token) {
      Duration ttl = d.policy.queue() ? d.ttl : Duration.ZERO;
      track(d.calls.fence(node, owner(round), token, ttl)
          .thenApply(f -> new Input(ActionKind.FENCE, node, round, Reply.nil(), f)), ActionKind.FENCE, node, round);
    }

    // The next input into the core; it waits for one, the end, or an interrupt that ends the call.
    private List<Action> next(long endAt) {
      while (true) {
        Input in;
        int left;
        synchronized (this) {
          in = inputs.poll();
          left = out;
        }
        if (in != null) {
          return feed(in);
        }
        long now = System.nanoTime();
        if (d.cancelled() || left == 0 || (d.policy.queue() && now - endAt >= 0)) {
          return core.onDeadline();
        }
        in = d.await(inputs, d.policy.queue() ? endAt - now : -1);
        if (in != null) {
          return feed(in);
        }
      }
    }

    private List<Action> feed(Input in) {
      if (!d.calls.b.refusal().isEmpty()) {
        // Two nodes reach one server: no reply counts, a grant brought is given back, and the
        // round is withdrawn everywhere, as at the deadline.
        List<Action> out = new ArrayList<>();
        if (in.kind() == ActionKind.ASK) {
          out.addAll(core.onLate(in.node(), in.round(), in.reply(), false));
        }
        out.addAll(core.onDeadline());
        return out;
      }
      switch (in.kind()) {
        case ASK -> {
          in.reply().failure().filter(f -> f.refused() != NodeFailure.Refused.NONE).ifPresent(f -> d.fin.put(in.node(), f));
          return core.onReply(in.node(), in.round(), in.reply(), System.nanoTime() - d.deadline >= 0);
        }
        case FENCE -> {
          boolean valid = d.calls.b.validity(d.ttl, leaseFrom).isPresent();
          return core.onFenced(in.node(), in.round(), in.failure(), valid);
        }
        default -> {
          return core.onPauseOver(in.node(), in.round());
        }
      }
    }
  }
}
