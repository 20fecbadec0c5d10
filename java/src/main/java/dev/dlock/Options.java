package dev.dlock;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Every option, its default and its check (client/src/options.rs, go/options.go): the same
 * defaults and meaning as the other clients. Made by {@link #builder()}; each setter checks its
 * value at once and throws {@link InvalidArgumentException} in the other clients' words.
 * Immutable; {@link #toString()} never shows a password.
 */
public final class Options {
  /** How a wait for a lock is done. */
  public enum WaitMode {
    /** Waits on the nodes (DLOCK.ACQUIRE ... WAIT ... TICKET), served in ticket order. */
    QUEUE,
    /** Tries, pauses the retry delay plus up to the retry jitter, and tries again. */
    RETRY
  }

  /** How many replicas each grant, commit and extension waits for. */
  public static final class ReplicaAck {
    /** 1 replica on cluster and sentinel nodes, none on plain masters. */
    public static final ReplicaAck AUTO = new ReplicaAck(-1);
    /** Waits for none. */
    public static final ReplicaAck OFF = new ReplicaAck(0);

    private final int replicas;

    private ReplicaAck(int replicas) {
      this.replicas = replicas;
    }

    /** Waits for {@code n} replicas on every node (0 or more). */
    public static ReplicaAck replicas(int n) {
      if (n < 0) {
        throw new InvalidArgumentException("replica count must be 0 or more, got " + n);
      }
      return new ReplicaAck(n);
    }

    /** The replicas to wait for; empty for {@link #AUTO} (the node's form decides). */
    public OptionalInt count() {
      return replicas < 0 ? OptionalInt.empty() : OptionalInt.of(replicas);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ReplicaAck r && r.replicas == replicas;
    }

    @Override
    public int hashCode() {
      return replicas;
    }

    @Override
    public String toString() {
      return replicas < 0 ? "auto" : Integer.toString(replicas);
    }
  }

  /** A user and password (an ACL login); the password is never shown. */
  public record Login(String user, String password) {
    /** Checks both are given ("" is none). */
    public Login {
      Objects.requireNonNull(user, "user");
      Objects.requireNonNull(password, "password");
    }

    @Override
    public String toString() {
      return "Login[user=" + user + ", password=" + (password.isEmpty() ? "" : "***") + "]";
    }
  }

  /** TLS files, each PEM: a CA bundle (replacing the system's roots), a certificate and its key. */
  public record TlsFiles(Optional<Path> ca, Optional<Path> cert, Optional<Path> key) {}

  final Duration timeout;
  final Duration ackTimeout;
  final boolean fencing;
  final WaitMode waitMode;
  final ReplicaAck ack;
  final Optional<Duration> maxHold;
  final Optional<Duration> extendInterval;
  final Duration retryDelay;
  final Duration retryJitter;
  final OptionalInt retryCount;
  final Timing.Drift drift;
  final Optional<TlsFiles> tls;
  final Optional<Login> login;
  final Optional<Login> sentinelLogin;
  final Duration lockTtl;

  private Options(Builder b) {
    timeout = b.timeout;
    ackTimeout = b.ackTimeout;
    fencing = b.fencing;
    waitMode = b.waitMode;
    ack = b.ack;
    maxHold = b.maxHold;
    extendInterval = b.extendInterval;
    retryDelay = b.retryDelay;
    retryJitter = b.retryJitter;
    retryCount = b.retryCount;
    drift = new Timing.Drift(b.driftFactor, b.driftConstant);
    tls = b.tls;
    login = b.login;
    sentinelLogin = b.sentinelLogin;
    lockTtl = b.lockTtl;
  }

  /**
   * The TTL a {@link DistributedLock} takes its lease with (default 30 s, Redisson's watchdog
   * timeout): a watchdog keeps it extended while held, so it only bounds how long a crashed
   * holder blocks the others.
   */
  public Duration lockTtl() {
    return lockTtl;
  }

  /** Every option at its default. */
  public static Options defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** Bounds every call to one node, connecting included (default 50 ms). */
  public Duration timeout() {
    return timeout;
  }

  /** How long a write waits for its replicas (default 100 ms). */
  public Duration ackTimeout() {
    return ackTimeout;
  }

  /** Two-phase quorum fencing (default on; ignored with one node). */
  public boolean fencing() {
    return fencing;
  }

  /** How a lock call waits (default queue; queue needs fencing with several nodes, else retry). */
  public WaitMode waitMode() {
    return waitMode;
  }

  /** How many replicas each write waits for (default auto). */
  public ReplicaAck replicaAck() {
    return ack;
  }

  /** How long a watchdog keeps a lock extended at most (default: no limit). */
  public Optional<Duration> maxHold() {
    return maxHold;
  }

  /** The watchdog's period (default: a third of the TTL). */
  public Optional<Duration> extendInterval() {
    return extendInterval;
  }

  /** The watchdog's period for a lock of {@code ttl}: the one given, else a third of the TTL. */
  public Duration extendInterval(Duration ttl) {
    return extendInterval.orElse(Duration.ofMillis(Math.max(ttl.toMillis() / 3, 1)));
  }

  /** The pause between attempts (default 25 ms). */
  public Duration retryDelay() {
    return retryDelay;
  }

  /** The largest random extra pause between attempts (default 25 ms). */
  public Duration retryJitter() {
    return retryJitter;
  }

  /** The most retries after the first attempt (default empty: until the wait runs out). */
  public OptionalInt retryCount() {
    return retryCount;
  }

  /** The clock-drift allowance (default 1% of the TTL + 2 ms). */
  public Timing.Drift drift() {
    return drift;
  }

  /** The TLS files for rediss:// nodes (default: the system's roots, no client certificate). */
  public Optional<TlsFiles> tls() {
    return tls;
  }

  /** The ACL login for nodes whose URL names none. */
  public Optional<Login> login() {
    return login;
  }

  /** The sentinels' own ACL login (a sentinel URL's login is the master's). */
  public Optional<Login> sentinelLogin() {
    return sentinelLogin;
  }

  @Override
  public String toString() {
    return "Options[timeout=" + Checks.show(timeout) + ", ackTimeout=" + Checks.show(ackTimeout)
        + ", fencing=" + fencing + ", waitMode=" + waitMode + ", replicaAck=" + ack
        + ", maxHold=" + maxHold.map(Checks::show).orElse("none")
        + ", extendInterval=" + extendInterval.map(Checks::show).orElse("ttl/3")
        + ", retryDelay=" + Checks.show(retryDelay) + ", retryJitter=" + Checks.show(retryJitter)
        + ", retryCount=" + (retryCount.isPresent() ? retryCount.getAsInt() : "unlimited")
        + ", drift=" + drift.factor() + "+" + Checks.show(drift.constant())
        + ", tls=" + tls.isPresent() + ", login=" + login.map(Login::toString).orElse("none")
        + ", sentinelLogin=" + sentinelLogin.map(Login::toString).orElse("none") + "]";
  }

  /** Builds {@link Options}; each setter refuses a bad value at once. */
  public static final class Builder {
    private Duration timeout = Duration.ofMillis(50);
    private Duration ackTimeout = Duration.ofMillis(100);
    private boolean fencing = true;
    private WaitMode waitMode = WaitMode.QUEUE;
    private ReplicaAck ack = ReplicaAck.AUTO;
    private Optional<Duration> maxHold = Optional.empty();
    private Optional<Duration> extendInterval = Optional.empty();
    private Duration retryDelay = Duration.ofMillis(25);
    private Duration retryJitter = Duration.ofMillis(25);
    private OptionalInt retryCount = OptionalInt.empty();
    private double driftFactor = Timing.Drift.DEFAULT.factor();
    private Duration driftConstant = Timing.Drift.DEFAULT.constant();
    private Optional<TlsFiles> tls = Optional.empty();
    private Optional<Login> login = Optional.empty();
    private Optional<Login> sentinelLogin = Optional.empty();
    private Duration lockTtl = Duration.ofSeconds(30);

    private Builder() {}

    /** The TTL of a {@link DistributedLock}'s lease (default 30 s; from 1 ms to a day, leaving validity). */
    public Builder lockTtl(Duration d) {
      Checks.checkTtl(d);
      lockTtl = d;
      return this;
    }

    // A duration option: at least least, and at most what the nodes take.
    private static Duration duration(String name, Duration d, Duration least) {
      if (d == null) {
        throw new InvalidArgumentException(name + " must be given");
      }
      if (d.compareTo(least) < 0) {
        throw new InvalidArgumentException(name + " must be at least " + Checks.show(least) + ", got " + Checks.show(d));
      }
      if (d.compareTo(Checks.MAX_WAIT) > 0) {
        throw new InvalidArgumentException(Checks.tooLong(name, d));
      }
      return d;
    }

    /** Bounds every call to one node, connecting included (default 50 ms, at least 1 ms). */
    public Builder timeout(Duration d) {
      timeout = duration("timeout", d, Duration.ofMillis(1));
      return this;
    }

    /** How long a write waits for its replicas (default 100 ms). */
    public Builder ackTimeout(Duration d) {
      ackTimeout = duration("ack timeout", d, Duration.ZERO);
      return this;
    }

    /** Two-phase quorum fencing on or off (default on; ignored with one node). */
    public Builder fencing(boolean on) {
      fencing = on;
      return this;
    }

    /** How a lock call waits (default {@link WaitMode#QUEUE}). */
    public Builder waitMode(WaitMode m) {
      if (m == null) {
        throw new InvalidArgumentException("wait mode must be QUEUE or RETRY, got none");
      }
      waitMode = m;
      return this;
    }

    /** How many replicas each write waits for (default {@link ReplicaAck#AUTO}). */
    public Builder replicaAck(ReplicaAck a) {
      ack = Objects.requireNonNullElse(a, ReplicaAck.AUTO);
      return this;
    }

    /** Caps how long a watchdog keeps a lock extended; the loss signal fires then. */
    public Builder maxHold(Duration d) {
      maxHold = Optional.of(duration("max hold", d, Duration.ofMillis(1)));
      return this;
    }

    /** The watchdog's period (default a third of the TTL). */
    public Builder extendInterval(Duration d) {
      extendInterval = Optional.of(duration("extend interval", d, Duration.ofMillis(1)));
      return this;
    }

    /** The pause between attempts (default 25 ms). */
    public Builder retryDelay(Duration d) {
      retryDelay = duration("retry delay", d, Duration.ZERO);
      return this;
    }

    /** The largest random extra pause between attempts (default 25 ms). */
    public Builder retryJitter(Duration d) {
      retryJitter = duration("retry jitter", d, Duration.ZERO);
      return this;
    }

    /** The most retries after the first attempt (default: until the wait runs out). */
    public Builder retryCount(int n) {
      if (n < 0) {
        throw new InvalidArgumentException("retry count must be 0 or more, got " + n);
      }
      retryCount = OptionalInt.of(n);
      return this;
    }

    /** The clock drift allowed, as a share of the TTL (default 0.01). */
    public Builder driftFactor(double f) {
      if (!(f >= 0) || f >= 1) {
        throw new InvalidArgumentException("drift factor must be from 0 to below 1 (a share of the TTL), got " + f);
      }
      driftFactor = f;
      return this;
    }

    /** The constant clock drift allowed (default 2 ms). */
    public Builder driftConstant(Duration d) {
      driftConstant = duration("drift constant", d, Duration.ZERO);
      return this;
    }

    /**
     * TLS files for rediss:// nodes, each PEM, null to leave one out: a CA bundle (replacing the
     * system's roots), a client certificate and its key for mutual TLS (a certificate needs its
     * key). The transport reads them when it connects.
     */
    public Builder tlsFiles(Path ca, Path cert, Path key) {
      if ((cert == null) != (key == null)) {
        throw new InvalidArgumentException("a client certificate needs its key and the reverse (certificate "
            + (cert == null ? "none" : DlockException.quote(cert.toString())) + ", key "
            + (key == null ? "none" : DlockException.quote(key.toString())) + ")");
      }
      tls = Optional.of(new TlsFiles(Optional.ofNullable(ca), Optional.ofNullable(cert), Optional.ofNullable(key)));
      return this;
    }

    /** The ACL user and password for nodes whose URL names none; in no error or log. */
    public Builder credentials(String user, String password) {
      login = Optional.of(new Login(Objects.requireNonNullElse(user, ""), Objects.requireNonNullElse(password, "")));
      return this;
    }

    /** The sentinels' own ACL user and password (redis+sentinel:// nodes). */
    public Builder sentinelCredentials(String user, String password) {
      sentinelLogin = Optional.of(new Login(Objects.requireNonNullElse(user, ""), Objects.requireNonNullElse(password, "")));
      return this;
    }

    /**
     * What the dlock CLI reads from its environment: DLOCK_USER and DLOCK_PASSWORD,
     * DLOCK_SENTINEL_USER and DLOCK_SENTINEL_PASSWORD, and the TLS files DLOCK_CACERT, DLOCK_CERT
     * and DLOCK_KEY, each when set. Setters called after it override it.
     */
    public Builder fromEnv() {
      return fromEnv(System.getenv());
    }

    Builder fromEnv(Map<String, String> env) {
      Login was = login.orElse(new Login("", ""));
      if (env.containsKey("DLOCK_USER") || env.containsKey("DLOCK_PASSWORD")) {
        credentials(env.getOrDefault("DLOCK_USER", was.user()), env.getOrDefault("DLOCK_PASSWORD", was.password()));
      }
      Login sent = sentinelLogin.orElse(new Login("", ""));
      if (env.containsKey("DLOCK_SENTINEL_USER") || env.containsKey("DLOCK_SENTINEL_PASSWORD")) {
        sentinelCredentials(env.getOrDefault("DLOCK_SENTINEL_USER", sent.user()),
            env.getOrDefault("DLOCK_SENTINEL_PASSWORD", sent.password()));
      }
      Path ca = path(env.get("DLOCK_CACERT"));
      Path cert = path(env.get("DLOCK_CERT"));
      Path key = path(env.get("DLOCK_KEY"));
      if (ca != null || cert != null || key != null) {
        tlsFiles(ca, cert, key);
      }
      return this;
    }

    // "" is unset, as the CLI reads it.
    private static Path path(String v) {
      return v == null || v.isEmpty() ? null : Path.of(v);
    }

    /** The options. */
    public Options build() {
      return new Options(this);
    }
  }
}
