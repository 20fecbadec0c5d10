package dev.dlock;

import dev.dlock.transport.Node;
import dev.dlock.transport.NodeFailure;
import dev.dlock.transport.RedisError;
import java.util.List;
import java.util.concurrent.CompletionException;

/**
 * A connection to the data's Redis (with the dlock module), for guarded writes
 * ({@link Lease#guarded}): made by {@link LockManager#data}, over the manager's TLS files and
 * login, its calls bounded by the manager's timeout. A reply is a value as the nodes' are: a bulk
 * or status as String, an integer as Long, nil as null, an array as List.
 */
public final class DataConnection implements AutoCloseable {
  private final Node node;
  private final java.time.Duration timeout;

  DataConnection(Node node, java.time.Duration timeout) {
    this.node = node;
    this.timeout = timeout;
  }

  /** The server's name (its URL, password hidden). */
  public String name() {
    return node.name();
  }

  /**
   * Sends one command: its reply.
   *
   * @throws DlockException the server's error reply, or why it could not be reached
   */
  public Object call(String... command) {
    Object r = send(List.of(command));
    if (r instanceof RedisError e) {
      throw new DlockException(node.name() + ": " + e.text());
    }
    return r;
  }

  // The reply, an error reply as a value.
  Object send(List<String> command) {
    try {
      return node.call(timeout, timeout, List.of(command)).join().get(0);
    } catch (CompletionException e) {
      if (e.getCause() instanceof NodeFailure f) {
        throw new DlockException(f.toString(), f);
      }
      throw e;
    }
  }

  /** Closes the connection. */
  @Override
  public void close() {
    node.close();
  }
}
