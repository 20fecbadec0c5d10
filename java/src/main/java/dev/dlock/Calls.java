package dev.dlock;

import dev.dlock.Backend.Answer;
import dev.dlock.Commands.Queued;
import dev.dlock.Replies.Reply;
import dev.dlock.transport.Ack;
import dev.dlock.transport.NodeFailure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * The calls to the nodes about one lock (go/calls.go, client/src/calls.rs), the one set every
 * path uses: an attempt's asks, waits and commits ({@link Driver}), a lease's extensions,
 * commit and release ({@link Lease}). Each reply is read here into what the caller decides on: an
 * ask's token, nil or failure, a commit's yes or why not, a tally. A set's calls are its DLOCK.*ALL
 * commands: one token for all its keys, one lock to everything else.
 */
final class Calls {
  final Backend b;
  final String resource;
  final Kind kind;
  final Optional<Sets.Members> set;

  Calls(Backend b, String resource, Kind kind, Optional<Sets.Members> set) {
    this.b = b;
    this.resource = resource;
    this.kind = kind;
    this.set = set;
  }

  /** What a request sent to several nodes found. */
  record Tally(int done, int refused, List<NodeFailure> unreachable) {
    int answered() {
      return done + refused;
    }
  }

  /** A write's outcome: whether the kind's quorum did it within the new validity, and when that ends. */
  record Extended(boolean ok, long validUntil, Tally tally) {}

  List<String> acquireCmd(String owner, Duration ttl, Optional<Queued> wait) {
    if (set.isPresent()) {
      return Commands.acquireAll(set.get(), owner, ttl, wait);
    }
    return wait.isPresent()
        ? Commands.acquireWait(resource, owner, ttl, wait.get(), kind)
        : Commands.acquire(resource, owner, ttl, kind, false);
  }

  private List<String> fenceCmd(String owner, long token, Duration ttl) {
    return set.isPresent() ? Commands.fenceAll(set.get(), owner, token, ttl) : Commands.fence(resource, owner, token, ttl);
  }

  private List<String> extendCmd(String owner, Duration ttl) {
    return set.isPresent() ? Commands.extendAll(set.get(), owner, ttl) : Commands.extend(resource, owner, ttl);
  }

  private List<String> releaseCmd(String owner) {
    return set.isPresent() ? Commands.releaseAll(set.get(), owner) : Commands.release(resource, owner);
  }

  /** DLOCK.ACQUIRE on {@code node} as {@code owner}; with {@code wait}, a server-side wait. */
  CompletableFuture<Reply> ask(int node, String owner, Duration ttl, Optional<Queued> wait) {
    Duration blocking = Duration.ZERO;
    if (wait.isPresent()) {
      Duration timeout = Duration.ofMillis(Math.max(wait.get().timeout().toMillis(), 1));
      wait = Optional.of(new Queued(timeout, wait.get().ticket()));
      // A server notices a wait's timeout only at its next tick: its nil may come that late.
      blocking = timeout.plus(Ack.TICK);
    }
    return b.call(node, acquireCmd(owner, ttl, wait), true, blocking).thenApply(a -> {
      if (a.failed()) {
        return Reply.failed(a.failure());
      }
      if (a.reply() == null) {
        return Reply.nil();
      }
      long token = Backend.tokenOf(a.reply());
      return token != 0 ? Reply.granted(token)
          : Reply.failed(NodeFailure.of(b.nodes.get(node).name(), "unexpected reply " + a.reply()));
    });
  }

  /**
   * DLOCK.FENCE of {@code token} as {@code owner} (with PX ttl when the commit starts the lease,
   * ttl above zero): empty when committed, else why not.
   */
  CompletableFuture<Optional<NodeFailure>> fence(int node, String owner, long token, Duration ttl) {
    return b.call(node, fenceCmd(owner, token, ttl), true, Duration.ZERO).thenApply(a -> {
      if (a.failed()) {
        return Optional.of(a.failure());
      }
      return Backend.isOne(a.reply()) ? Optional.<NodeFailure>empty()
          : Optional.of(NodeFailure.of(b.nodes.get(node).name(), "fence refused: lock no longer held"));
    });
  }

  /**
   * The commit a hold owes ({@link Commit}): FENCE of {@code token}, PX {@code ttl}, on the
   * holding nodes in parallel, each answer fed to the machine: completes with whether a quorum
   * committed once that is decided; {@code rest} completes once every node asked answered.
   */
  CompletableFuture<Boolean> commit(String owner, long token, Duration ttl, List<Integer> holding, int needed,
      CompletableFuture<Void> rest) {
    Commit.Started s = Commit.start(b.nodes.size(), needed, token, holding);
    CompletableFuture<Boolean> decided = new CompletableFuture<>();
    List<CompletableFuture<?>> answers = new ArrayList<>();
    Object lock = new Object();
    for (int n : s.asked()) {
      answers.add(fence(n, owner, token, ttl).thenAccept(failure -> {
        synchronized (lock) {
          s.commit().onFenced(n, failure.isEmpty());
          if (s.commit().outcome() != Commit.Outcome.PENDING) {
            decided.complete(s.commit().outcome() == Commit.Outcome.COMMITTED);
          }
        }
      }));
    }
    synchronized (lock) {
      if (s.commit().outcome() != Commit.Outcome.PENDING) {
        decided.complete(s.commit().outcome() == Commit.Outcome.COMMITTED);
      }
    }
    CompletableFuture.allOf(answers.toArray(new CompletableFuture<?>[0])).whenComplete((v, e) -> {
      decided.complete(false); // every answer in and still pending cannot happen; no hang if it did
      rest.complete(null);
    });
    return decided;
  }

  /** DLOCK.EXTEND on one node (the renewal of a lock held on one node). */
  CompletableFuture<Boolean> renew(int node, String owner, Duration ttl) {
    return b.call(node, extendCmd(owner, ttl), true, Duration.ZERO).thenApply(a -> !a.failed() && Backend.isOne(a.reply()));
  }

  /** Sends {@code cmd} to {@code nodes} in parallel; {@code read} tells a reply that did what was asked. */
  CompletableFuture<Tally> everywhere(List<Integer> nodes, List<String> cmd, boolean acked, Predicate<Object> read) {
    List<CompletableFuture<Answer>> calls = new ArrayList<>();
    for (int n : nodes) {
      calls.add(b.call(n, cmd, acked, Duration.ZERO));
    }
    return CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0])).thenApply(v -> {
      int done = 0;
      int refused = 0;
      List<NodeFailure> unreachable = new ArrayList<>();
      for (CompletableFuture<Answer> c : calls) {
        Answer a = c.join();
        if (a.failed()) {
          unreachable.add(a.failure());
        } else if (read.test(a.reply())) {
          done++;
        } else {
          refused++;
        }
      }
      return new Tally(done, refused, unreachable);
    });
  }

  /** DLOCK.EXTEND everywhere: ok if the kind's quorum extended within the new validity. */
  CompletableFuture<Extended> extend(String owner, Duration ttl) {
    long started = System.nanoTime();
    return everywhere(b.everywhere(), extendCmd(owner, ttl), true, Backend::isOne).thenApply(t -> {
      Optional<Duration> left = b.validity(ttl, started);
      boolean ok = left.isPresent() && t.done() >= b.needed(kind);
      return new Extended(ok, System.nanoTime() + left.orElse(Duration.ZERO).toNanos(), t);
    });
  }

  /** DLOCK.RELEASE (a set's RELEASEALL) of {@code owner} on {@code nodes}: frees its grants, withdraws its waits. */
  CompletableFuture<Tally> release(String owner, List<Integer> nodes) {
    return b.track(everywhere(nodes, releaseCmd(owner), false, r -> r instanceof Long n && n >= 1));
  }

  /** DLOCK.STATUS on every node, in node order. */
  CompletableFuture<List<Answer>> status() {
    List<CompletableFuture<Answer>> calls = new ArrayList<>();
    for (int n : b.everywhere()) {
      calls.add(b.call(n, Commands.status(resource), false, Duration.ZERO));
    }
    return CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> calls.stream().map(CompletableFuture::join).toList());
  }

  /**
   * An extension that was not confirmed: refused when so many nodes said "not held" that the
   * kind's quorum is out of reach, else unconfirmed.
   */
  Renewal.Extension outcome(Tally t) {
    return Renewal.outcome(b.nodes.size(), b.needed(kind), t.refused());
  }
}
