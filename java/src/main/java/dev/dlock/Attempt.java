package dev.dlock;

import dev.dlock.transport.NodeFailure;
import dev.dlock.Acquisition.Event;
import dev.dlock.Acquisition.Step;
import dev.dlock.Replies.Counts;
import dev.dlock.Replies.Outcome;
import dev.dlock.Replies.Policy;
import dev.dlock.Replies.Reply;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One attempt to take a lock, free of I/O (client/src/attempt.rs, go/attempt.go;
 * conformance/attempts.json, leases.json, retries.json): the acquisition machine and every
 * decision the driver takes around it. Replies go in, actions come out; the driver does the
 * sending, the timers and the background work.
 *
 * <ul>
 *   <li>How a reply counts: {@link Replies#classify}.
 *   <li>Asking again: a failed node is asked again; a queued wait after the retry pause while its
 *       round lasts (the machine counts the node out meanwhile), a plain ACQUIRE at once, once
 *       per round, while a quorum has not granted yet (its failure counts only if the repeat
 *       fails too).
 *   <li>Once held, requests still out stay out: a grant they bring is the holder's and goes with
 *       the holder's RELEASE; a grant of an earlier round, of an attempt that did not hold, or
 *       that comes after the holder released is released at once ({@link #onLate}).
 *   <li>Why it failed ({@link AttemptError}): too many failed nodes for a quorum is no quorum; a
 *       one-round commit that missed is no quorum, or expired once validity ran out; otherwise
 *       contended.
 * </ul>
 */
final class Attempt {
  /** What the driver is to do. */
  enum ActionKind {
    /** Ask the nodes as the owner of the round: a new round, whose lease counts from here. */
    ASK,
    /** Ask the node again, at once or after the retry pause (then {@link #onPauseOver}). */
    ASK_AGAIN,
    FENCE,
    RELEASE,
    HELD,
    FAILED
  }

  /** One action; the fields its kind does not use are zero or empty. */
  record Action(ActionKind kind, int round, long token, List<Integer> nodes, int node,
      boolean afterPause, Optional<AttemptError> error) {
    Action {
      nodes = List.copyOf(nodes);
    }

    static Action of(ActionKind kind, int round, long token, List<Integer> nodes) {
      return new Action(kind, round, token, nodes, 0, false, Optional.empty());
    }

    static Action askAgain(int node, int round, boolean afterPause) {
      return new Action(ActionKind.ASK_AGAIN, round, 0, List.of(), node, afterPause, Optional.empty());
    }

    static Action failed(AttemptError err) {
      return new Action(ActionKind.FAILED, 0, 0, List.of(), 0, false, Optional.of(err));
    }
  }

  /** What a held lock's lease comes to. */
  enum Lease {
    HELD,
    /**
     * One node, whose grant may have come long after the wait was sent: renew the TTL once
     * (EXTEND) and count validity from the renewal.
     */
    RENEW,
    EXPIRED
  }

  private final int nodes;
  private final Policy policy;
  private final Acquisition machine;
  private Outcome[] outcomes; // this round, each node's last answer
  private boolean[] askedAgain; // this round, asked again at once
  private List<NodeFailure> uncommitted = new ArrayList<>();
  private int heldRound = -1;
  private final Set<Integer> refusedNodes = new HashSet<>(); // their setup met a final refusal

  /** The attempt and its first actions. */
  record Started(Attempt attempt, List<Action> actions) {}

  private Attempt(int nodes, Policy policy, Acquisition machine) {
    this.nodes = nodes;
    this.policy = policy;
    this.machine = machine;
    this.outcomes = fresh(nodes);
    this.askedAgain = new boolean[nodes];
  }

  /** Round 0 of an attempt held once {@code needed} of {@code nodes} nodes committed. */
  static Started start(int nodes, int needed, Policy p) {
    Acquisition.Started s = p.queue()
        ? Acquisition.startAcquisition(nodes, needed)
        : Acquisition.startOnce(nodes, needed, p.commit());
    Attempt a = new Attempt(Math.max(nodes, 0), p, s.machine());
    return new Started(a, a.act(s.steps(), true));
  }

  private static Outcome[] fresh(int nodes) {
    Outcome[] out = new Outcome[nodes];
    java.util.Arrays.fill(out, Outcome.NONE);
    return out;
  }

  /** The current round. */
  int round() {
    return machine.round();
  }

  /** Tells a held or failed attempt. */
  boolean isOver() {
    return machine.isOver();
  }

  /** The nodes that granted this round (the holder's nodes once held). */
  List<Integer> grantedNodes() {
    return machine.grantedNodes();
  }

  /**
   * How a held lock on {@code nodes} nodes comes out, given the validity left (empty: none)
   * counted from the request that last set its TTL; {@code renewed}: after the one renewal.
   */
  static Lease lease(int nodes, Optional<Duration> left, Duration ttl, boolean renewed) {
    if (nodes == 1 && !renewed && (left.isEmpty() || left.get().multipliedBy(2).compareTo(ttl) < 0)) {
      return Lease.RENEW;
    }
    return left.isPresent() ? Lease.HELD : Lease.EXPIRED;
  }

  /**
   * Whether a failed attempt is followed by another (after the retry pause): not when the kind
   * or an argument was refused, nor when nodes refused for the call left a quorum out of reach,
   * nor when a queued attempt was contended (it waited to the deadline), nor out of time (the
   * pause would end past the deadline) or of retries ({@code retryCount} empty: unlimited).
   */
  static boolean anotherAttempt(Policy p, AttemptError err, boolean outOfTime, int attempts,
      OptionalInt retryCount) {
    AttemptError.Kind k = err.kind();
    if (err.isFinal() || k == AttemptError.Kind.WRONG_KIND || k == AttemptError.Kind.INVALID_ARGUMENT
        || (k == AttemptError.Kind.CONTENDED && p.queue())) {
      return false;
    }
    return !outOfTime && (retryCount.isEmpty() || attempts <= retryCount.getAsInt());
  }

  /** A node's reply to its ask of a round. */
  List<Action> onReply(int node, int round, Reply r, boolean pastDeadline) {
    if (isOver()) {
      return onLate(node, round, r, false);
    }
    Outcome out = Replies.classify(r, policy, pastDeadline);
    Event ev = out.counts() == Counts.GRANTED
        ? Event.granted(node, round, out.token())
        : Event.unavailable(node, round);
    if (round != round() || node < 0 || node >= nodes) {
      return act(machine.on(ev), true); // a stale grant is released
    }
    if (out.counts() == Counts.WRONG_KIND) {
      return giveUp(AttemptError.of(AttemptError.Kind.WRONG_KIND, List.of(out.failure().orElseThrow())));
    }
    if (out.counts() == Counts.INVALID) {
      return giveUp(AttemptError.of(AttemptError.Kind.INVALID_ARGUMENT, List.of(out.failure().orElseThrow())));
    }
    outcomes[node] = out;
    boolean failed = out.counts() == Counts.FAILED;
    if (failed && out.failure().orElseThrow().refused() == NodeFailure.Refused.SETUP) {
      return refusedForGood(node, ev);
    }
    if (failed && askAtOnce(node)) {
      return List.of(Action.askAgain(node, round, false)); // the repeat counts instead
    }
    List<Action> actions = new ArrayList<>(act(machine.on(ev), true));
    if (failed && policy.queue() && !isOver()) {
      actions.add(Action.askAgain(node, round, true));
    }
    return actions;
  }

  // A node whose connection setup met a refusal waiting cannot cure is never asked again; once
  // such nodes leave a quorum out of reach, the call ends at once.
  private List<Action> refusedForGood(int node, Event ev) {
    refusedNodes.add(node);
    if (nodes - refusedNodes.size() < machine.needed()) {
      return giveUp(new AttemptError(AttemptError.Kind.NO_QUORUM, failures(), true, Optional.empty()));
    }
    return act(machine.on(ev), true);
  }

  // A plain ACQUIRE that failed is repeated at once, once per round, unless a quorum granted
  // without it.
  private boolean askAtOnce(int node) {
    if (policy.queue() || askedAgain[node] || machine.grantedNodes().size() >= machine.needed()) {
      return false;
    }
    askedAgain[node] = true;
    return true;
  }

  /** The retry pause of an ask-again is over: the ask goes if its round still lasts. */
  List<Action> onPauseOver(int node, int round) {
    if (isOver() || round != round()) {
      return List.of();
    }
    return List.of(Action.askAgain(node, round, false));
  }

  /**
   * A node's reply to the commit of a round: committed (no failure) or why not; {@code valid}:
   * validity is left now.
   */
  List<Action> onFenced(int node, int round, Optional<NodeFailure> failure, boolean valid) {
    if (failure.isPresent() && round == round() && !isOver()) {
      uncommitted.add(failure.get());
    }
    return act(machine.on(Event.fenced(node, round, failure.isEmpty())), valid);
  }

  /** The attempt's time ran out (queued attempts only): its round is withdrawn. */
  List<Action> onDeadline() {
    return isOver() ? List.of() : giveUp(verdict(true));
  }

  /**
   * A reply after the attempt ended, or after the holder released ({@code released}): a grant is
   * released unless it is the holder's.
   */
  List<Action> onLate(int node, int round, Reply r, boolean released) {
    if (!r.isGrant()) {
      return List.of();
    }
    if (heldRound == round && !released) {
      return List.of(); // the holder's: its RELEASE frees it
    }
    return List.of(Action.of(ActionKind.RELEASE, round, 0, List.of(node)));
  }

  // Ends the attempt now: its round withdrawn everywhere.
  private List<Action> giveUp(AttemptError err) {
    List<Action> actions = new ArrayList<>();
    for (Step s : machine.abandon()) {
      if (s.kind() == Acquisition.StepKind.RELEASE) {
        actions.add(Action.of(ActionKind.RELEASE, s.round(), 0, s.nodes()));
      }
    }
    actions.add(Action.failed(err));
    return actions;
  }

  // The machine's steps as actions.
  private List<Action> act(List<Step> steps, boolean valid) {
    List<Action> actions = new ArrayList<>(steps.size());
    for (Step s : steps) {
      switch (s.kind()) {
        case WAIT -> {
          outcomes = fresh(nodes);
          askedAgain = new boolean[nodes];
          uncommitted = new ArrayList<>();
          actions.add(Action.of(ActionKind.ASK, s.round(), 0, s.nodes()));
        }
        case FENCE -> actions.add(Action.of(ActionKind.FENCE, s.round(), s.token(), s.nodes()));
        case RELEASE -> actions.add(Action.of(ActionKind.RELEASE, s.round(), 0, s.nodes()));
        case HELD -> {
          heldRound = round();
          actions.add(Action.of(ActionKind.HELD, round(), s.token(), List.of()));
        }
        case FAILED -> actions.add(Action.failed(verdict(valid)));
      }
    }
    return actions;
  }

  private List<NodeFailure> failures() {
    List<NodeFailure> out = new ArrayList<>();
    for (Outcome o : outcomes) {
      if (o.counts() == Counts.FAILED) {
        out.add(o.failure().orElseThrow());
      }
    }
    return out;
  }

  // Why this round came to nothing (see the notes above).
  private AttemptError verdict(boolean valid) {
    List<NodeFailure> failures = failures();
    if (!uncommitted.isEmpty()) {
      if (!valid) {
        return AttemptError.of(AttemptError.Kind.VALIDITY_EXPIRED);
      }
      failures.addAll(uncommitted);
      return AttemptError.of(AttemptError.Kind.NO_QUORUM, failures);
    }
    if (nodes - failures.size() < machine.needed()) {
      return AttemptError.of(AttemptError.Kind.NO_QUORUM, failures);
    }
    return AttemptError.of(AttemptError.Kind.CONTENDED);
  }
}
