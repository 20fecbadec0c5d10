package dev.dlock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;

/**
 * The async API's calls on a worker thread. {@code CompletableFuture.cancel} never interrupts
 * the thread computing it, so a cancelled call would keep waiting and take the lock nobody holds
 * (conformance/README.md: a caller cancelled "leaves the queue and hands nothing on"). Here a
 * cancel interrupts the worker, whose call is interruptible: its wait is withdrawn on the nodes
 * (RELEASE of the round's owner) and it leaves the process's queue, as an interrupted
 * {@link DistributedLock#lockInterruptibly} does; a lease won just as the future was cancelled is
 * given back. Election.campaignAsync does the same for a campaign.
 */
final class Async {
  private Async() {}

  /** A call to the nodes that an interrupt may end (InterruptedException). */
  interface Take {
    Lease run() throws InterruptedException;
  }

  /** What an interruptible call throws, for the ones that are not. */
  static Lease unchecked(Take t) {
    try {
      return t.run();
    } catch (InterruptedException e) {
      throw new IllegalStateException("an uninterruptible wait was interrupted", e); // cannot happen
    }
  }

  /** {@code take} on a worker of {@code b}, answered by the future; cancelling it ends the call. */
  static CompletableFuture<Lease> take(Backend b, String resource, Take take) {
    CompletableFuture<Lease> result = new CompletableFuture<>();
    Future<?> task;
    try {
      task = b.workers.submit(() -> run(result, take));
    } catch (RejectedExecutionException e) {
      result.completeExceptionally(new ManagerClosedException(resource)); // its workers ended with it
      return result;
    }
    result.whenComplete((l, e) -> {
      if (result.isCancelled()) {
        task.cancel(true);
      }
    });
    return result;
  }

  private static void run(CompletableFuture<Lease> result, Take take) {
    if (result.isDone()) {
      return; // cancelled before it started
    }
    try {
      Lease won = take.run();
      if (!result.complete(won)) {
        giveBack(won); // cancelled meanwhile: nobody will release it
      }
    } catch (InterruptedException e) {
      result.completeExceptionally(e); // a no-op once cancelled, the interrupt's usual cause
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
  }

  private static void giveBack(Lease l) {
    try {
      l.release();
    } catch (DlockException e) {
      // Not given back everywhere: those nodes keep it until its TTL, as any unreachable release.
    }
  }
}
