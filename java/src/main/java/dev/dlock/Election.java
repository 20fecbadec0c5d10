package dev.dlock;

import dev.dlock.Backend.Answer;
import dev.dlock.ElectionRule.Verdict;
import dev.dlock.ElectionRule.View;
import dev.dlock.Replies.Policy;
import dev.dlock.transport.NodeFailure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * Leader election's I/O (go/election.go, client/src/election.rs; docs/election.md): a campaign is
 * a queued exclusive lock on the election's name whose owner carries the candidate's value
 * ({@code "<id> <value>"}), so the fair queue, the handoff, replication and persistence carry the
 * value with the grant; the leader's epoch is its fencing token. Who leads is read here
 * ({@link #leader}) and followed ({@link ElectionWatch}) by one rule ({@link ElectionRule}).
 */
final class Election {
  /**
   * How long one queued round of a campaign waits before it queues again: it waits on the nodes,
   * so this only bounds how stale a forgotten campaign's place can get (Go's campaignRound).
   */
  static final Duration ROUND = Duration.ofMinutes(1);

  private Election() {}

  /** Refuses bad input before any node is asked, and a closed manager. */
  static void check(Backend b, String name, String value) {
    ElectionRule.check(name, value);
    Checks.checkName(name);
    if (b.isClosed()) {
      throw new ManagerClosedException(name);
    }
  }

  /**
   * Queues to lead {@code name} with {@code value} until elected (Go's Campaign): contention only
   * makes it queue again; anything else (no quorum, another kind) is the caller's exception.
   *
   * @throws InterruptedException interrupted while campaigning: the round is withdrawn first
   */
  static Leadership campaign(Backend b, String name, String value, Duration ttl) throws InterruptedException {
    String v = value == null ? "" : value;
    check(b, name, v);
    Checks.checkLease(ttl, b.options.drift());
    Duration whole = Duration.ofMillis(ttl.toMillis());
    Calls c = new Calls(b, name, Kind.EXCLUSIVE, Optional.empty());
    // Queued on the nodes the grant is committed before it is reported; retrying, the hold owes
    // its commit, paid below before leadership is reported (the commit-on-use rule).
    Policy p = b.queue ? Policy.QUEUE : Policy.NO_WAIT_UNCOMMITTED;
    boolean owes = !b.queue && Commit.owed(true, b.nodes.size(), b.options.fencing());
    while (true) {
      Driver.Outcome o = new Driver(c, whole, ROUND, p, true).labelled(v).run(false);
      if (o.won() != null) {
        return elected(new Lease(c, whole, o.won(), owes), v);
      }
      if (o.interrupted() || Thread.interrupted()) {
        throw new InterruptedException("campaigning for " + DlockException.quote(name) + " was interrupted");
      }
      if (o.failure().kind() != AttemptError.Kind.CONTENDED) {
        throw o.failure().toException(name, b.needed(Kind.EXCLUSIVE), o.attempts());
      }
    }
  }

  // The epoch is committed on a quorum before leadership is reported; a commit that fails gives
  // the lock back (Lease.token does) and is the caller's LockLostException.
  private static Leadership elected(Lease lease, String value) {
    lease.token();
    lease.watch();
    return new Leadership(lease, value);
  }

  /**
   * {@link #campaign} on a worker thread; cancelling the future interrupts the campaign (its
   * round withdrawn), and a leadership won as it was cancelled is resigned.
   */
  static CompletableFuture<Leadership> campaignAsync(Backend b, String name, String value, Duration ttl) {
    check(b, name, value == null ? "" : value);
    Checks.checkLease(ttl, b.options.drift());
    CompletableFuture<Leadership> result = new CompletableFuture<>();
    Future<?> task = b.workers.submit(() -> {
      try {
        Leadership won = campaign(b, name, value, ttl);
        if (!result.complete(won)) {
          won.resign(); // cancelled meanwhile: nobody will resign it
        }
      } catch (InterruptedException e) {
        result.completeExceptionally(e); // a no-op once cancelled, the interrupt's usual cause
      } catch (RuntimeException e) {
        result.completeExceptionally(e);
      }
    });
    result.whenComplete((l, e) -> {
      if (result.isCancelled()) {
        task.cancel(true);
      }
    });
    return result;
  }

  /**
   * Who leads {@code name} now, from every node's DLOCK.STATUS by the leader rule.
   *
   * @throws NoQuorumException fewer than a majority answered
   * @throws WrongKindException the name is held shared or as a semaphore
   */
  static Optional<Leader> leader(Backend b, String name) {
    check(b, name, "");
    Calls c = new Calls(b, name, Kind.EXCLUSIVE, Optional.empty());
    List<Answer> answers = c.status().join();
    List<View> views = new ArrayList<>();
    List<NodeFailure> failures = new ArrayList<>();
    for (int node = 0; node < answers.size(); node++) {
      Heard h = heard(b, name, node, answers.get(node));
      if (h.wrongKind().isPresent()) {
        throw h.wrongKind().get();
      }
      h.failure().ifPresent(failures::add);
      views.add(h.view());
    }
    int needed = Timing.majority(b.nodes.size());
    Verdict v = ElectionRule.leaderView(views, needed, Optional.empty());
    if (!v.known()) {
      throw new NoQuorumException(name, needed, failures);
    }
    return v.leader();
  }

  /**
   * What one node's answer says: its view (no answer on a failure), why it failed, or that the
   * name is held as another kind (which no asking again cures).
   */
  record Heard(View view, Optional<NodeFailure> failure, Optional<WrongKindException> wrongKind) {
    static Heard failed(NodeFailure f) {
      return new Heard(View.noAnswer(), Optional.of(f), Optional.empty());
    }
  }

  /** Reads a node's DLOCK.STATUS or DLOCK.OBSERVE answer (nil: free; else fields in pairs). */
  static Heard heard(Backend b, String name, int node, Answer a) {
    String where = b.nodes.get(node).name();
    if (a.failed()) {
      if (Replies.isWrongKind(a.failure())) {
        return wrongKind(name, a.failure().node(), a.failure().reason());
      }
      return Heard.failed(a.failure());
    }
    if (a.reply() == null) {
      return new Heard(View.free(), Optional.empty(), Optional.empty());
    }
    if (!(a.reply() instanceof List<?> list) || list.size() % 2 != 0) {
      return Heard.failed(NodeFailure.of(where, "unexpected reply " + a.reply()));
    }
    String owner = null;
    long token = 0;
    for (int i = 0; i < list.size(); i += 2) {
      String field = String.valueOf(list.get(i));
      Object value = list.get(i + 1);
      switch (field) {
        case "owner" -> owner = value instanceof String s ? s : null;
        case "token" -> token = tokenOf(value);
        case "kind" -> {
          return wrongKind(name, where, "held as a shared lock or semaphore, not an election");
        }
        default -> {
          // Other fields (ttl, holds, waiters) say nothing about who leads.
        }
      }
    }
    if (owner == null || token == 0) {
      return Heard.failed(NodeFailure.of(where, "a reply without owner and token: " + list));
    }
    return new Heard(View.held(owner, token), Optional.empty(), Optional.empty());
  }

  private static Heard wrongKind(String name, String node, String reason) {
    return new Heard(View.noAnswer(), Optional.of(NodeFailure.of(node, reason)),
        Optional.of(new WrongKindException(name, node, reason)));
  }

  // A token as the reply carries it: an integer, or its decimal text (unsigned 64 bits).
  private static long tokenOf(Object value) {
    if (value instanceof Long n) {
      return n;
    }
    try {
      return value instanceof String s ? Long.parseUnsignedLong(s) : 0;
    } catch (NumberFormatException e) {
      return 0; // not a token: the reply is reported as one without a token
    }
  }
}
