package dev.dlock;

import dev.dlock.transport.Ack;
import dev.dlock.transport.Connect;
import dev.dlock.transport.Diagnosis;
import dev.dlock.transport.Node;
import dev.dlock.transport.NodeFailure;
import dev.dlock.transport.RedisError;
import dev.dlock.transport.Registry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a manager and the leases it hands out share (go/backend.go, client/src/backend.rs): the
 * nodes, the options, one call to a node (with its replica acknowledgement), the threads the
 * background work runs on, the local waits, the retry pause and validity.
 */
final class Backend {
  final List<Node> nodes;
  final Registry registry;
  final Options options;
  /** Waits queue on the nodes (else retry mode): with one node no commit is needed, fencing or not. */
  final boolean queue;
  final LocalWaits localWaits = new LocalWaits();
  /** Background work (releases of abandoned rounds, watchdog steps, the async API): daemon threads. */
  final ExecutorService workers;
  /** The timers (renew deadlines, watchdog pauses): one daemon thread that only hands work on. */
  final ScheduledExecutorService timers;
  private final Ack ack; // null: writes wait for no replica
  private final Connect connect;
  private final Set<CompletableFuture<?>> background = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** A node's reply, or why there is none: never both. */
  record Answer(Object reply, NodeFailure failure) {
    static Answer of(Object reply) {
      return new Answer(reply, null);
    }

    static Answer failed(NodeFailure failure) {
      return new Answer(null, failure);
    }

    boolean failed() {
      return failure != null;
    }
  }

  Backend(List<Node> nodes, Registry registry, Options options, Connect connect) {
    this.nodes = List.copyOf(nodes);
    this.registry = registry;
    this.options = options;
    this.connect = connect;
    this.queue = options.waitMode() == Options.WaitMode.QUEUE && (options.fencing() || nodes.size() == 1);
    this.ack = ackOf(options);
    this.workers = Executors.newCachedThreadPool(daemons("dlock-worker"));
    this.timers = Executors.newSingleThreadScheduledExecutor(daemons("dlock-timer"));
  }

  private static Ack ackOf(Options o) {
    if (o.replicaAck().count().isPresent()) {
      int n = o.replicaAck().count().getAsInt();
      return n > 0 ? new Ack(n, o.ackTimeout(), true) : null;
    }
    return new Ack(1, o.ackTimeout(), false); // auto: cluster and sentinel nodes only
  }

  // Daemon threads: a manager left open must not keep the JVM alive.
  private static ThreadFactory daemons(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  Connect connect() {
    return connect;
  }

  int needed(Kind k) {
    return k.quorum(nodes.size());
  }

  List<Integer> everywhere() {
    List<Integer> all = new ArrayList<>(nodes.size());
    for (int i = 0; i < nodes.size(); i++) {
      all.add(i);
    }
    return all;
  }

  boolean isClosed() {
    return closed;
  }

  /** Runs work in the background; {@link #close} waits for it, within a bound. */
  void spawn(Runnable work) {
    if (workers.isShutdown()) {
      return; // closed: the nodes are closed too, so the work (a release) could reach none of them
    }
    CompletableFuture<Void> f = CompletableFuture.runAsync(work, workers);
    background.add(f);
    f.whenComplete((v, e) -> background.remove(f));
  }

  /** Tracks a request still out, so that close waits for it too. */
  <T> CompletableFuture<T> track(CompletableFuture<T> f) {
    background.add(f);
    f.whenComplete((v, e) -> background.remove(f));
    return f;
  }

  /** The retry delay plus up to the jitter, so contenders do not retry in lockstep. */
  Duration retryPause() {
    long jitter = options.retryJitter().toNanos();
    long extra = jitter > 0 ? java.util.concurrent.ThreadLocalRandom.current().nextLong(jitter) : 0;
    return options.retryDelay().plusNanos(extra);
  }

  /** Validity left of a hold of {@code ttl} whose TTL was set by a request sent at {@code since} (nanoTime). */
  Optional<Duration> validity(Duration ttl, long since) {
    return Timing.validity(ttl, Duration.ofNanos(System.nanoTime() - since), options.drift());
  }

  /** Why every acquisition is refused: two nodes reach one server ("" while none do). */
  String refusal() {
    return registry.refusal();
  }

  /**
   * Sends one command to {@code node}, with its replica acknowledgement when it writes
   * ({@code acked}); {@code blocking} is how long the server may hold the reply (a queued wait,
   * sent on a connection of its own). Never fails: a failure is the answer's.
   */
  CompletableFuture<Answer> call(int node, List<String> cmd, boolean acked, Duration blocking) {
    Node n = nodes.get(node);
    String why = registry.refused(node);
    if (!why.isEmpty()) {
      return CompletableFuture.completedFuture(Answer.failed(NodeFailure.of(n.name(), why))); // never asked again
    }
    List<List<String>> cmds = new ArrayList<>(2);
    cmds.add(cmd);
    Duration timeout = options.timeout();
    Duration whole = timeout.plus(blocking);
    boolean acking = acked && ack != null && ack.on(n);
    if (acking) {
      cmds.add(ack.await());
      whole = whole.plus(ack.extra());
    }
    CompletableFuture<List<Object>> sent = blocking.isZero()
        ? n.call(timeout, whole, cmds) : n.callAlone(timeout, whole, cmds);
    return sent.handle((replies, err) -> {
      registry.met(node);
      if (err != null) {
        return Answer.failed(failureOf(n.name(), err));
      }
      Object r = replies.get(0);
      if (r instanceof RedisError e) {
        return Answer.failed(NodeFailure.of(n.name(), Diagnosis.explainReply(e)));
      }
      if (acking) {
        Optional<NodeFailure> short_ = ack.check(n.name(), replies);
        if (short_.isPresent()) {
          return Answer.failed(short_.get());
        }
      }
      return Answer.of(r);
    });
  }

  // The transport fails a call only with a NodeFailure; anything else is a bug named as it is.
  private static NodeFailure failureOf(String node, Throwable err) {
    Throwable e = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
    if (e instanceof NodeFailure f) {
      return f;
    }
    return new NodeFailure(node, "unexpected failure: " + e, false, NodeFailure.Refused.NONE, e);
  }

  /**
   * Waits, at most {@code within}, until every node was met once (transport/Identity): only a
   * manager's first lock waits.
   */
  void meetAll(Duration within) {
    long until = System.nanoTime() + within.toNanos();
    while (!registry.allMet() && System.nanoTime() < until) {
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the caller's wait sees it next
        return;
      }
    }
  }

  /**
   * Closes: waits for the work left in the background (releases of withdrawn waits, of failed
   * rounds) within a bound, then ends the threads and closes every connection.
   */
  void close() {
    if (closed) {
      return;
    }
    closed = true;
    long bound = Math.max(4 * options.timeout().toMillis(), 250);
    CompletableFuture<?>[] left = background.toArray(new CompletableFuture<?>[0]);
    try {
      CompletableFuture.allOf(left).get(bound, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // A release that failed or is still out: its node keeps the hold until its TTL, which
      // is what a release that cannot reach its node comes to anyway.
    }
    timers.shutdownNow();
    workers.shutdown();
    for (Node n : nodes) {
      n.close();
    }
    connect.close();
  }

  /** A grant's token: a positive integer (tokens pass 2^53: integers only), else 0. */
  static long tokenOf(Object r) {
    return r instanceof Long n && n > 0 ? n : 0;
  }

  static boolean isOne(Object r) {
    return r instanceof Long n && n == 1;
  }
}
