package dev.dlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Every DLOCK.* command the client sends, built here and nowhere else (client/src/commands.rs,
 * go/commands.go). Durations are whole milliseconds; tokens unsigned decimal.
 */
final class Commands {
  private Commands() {}

  /** A server-side wait: its timeout and ticket (0: none). */
  record Queued(Duration timeout, long ticket) {}

  static String ms(Duration d) {
    return Long.toString(d.toMillis());
  }

  /** {@code DLOCK.ACQUIRE resource owner ttl [REENTRANT] [kind]}: a token, or nil when held. */
  static List<String> acquire(String resource, String owner, Duration ttl, Kind kind, boolean reentrant) {
    List<String> args = new ArrayList<>(List.of("DLOCK.ACQUIRE", resource, owner, ms(ttl)));
    if (reentrant) {
      args.add("REENTRANT");
    }
    args.addAll(kind.args());
    return args;
  }

  /**
   * {@code DLOCK.ACQUIRE resource owner ttl WAIT timeout [TICKET t] [kind]}: a token, or nil when
   * the wait ended without a grant. It blocks its connection on the node.
   */
  static List<String> acquireWait(String resource, String owner, Duration ttl, Queued wait, Kind kind) {
    List<String> args = new ArrayList<>(List.of("DLOCK.ACQUIRE", resource, owner, ms(ttl), "WAIT", ms(wait.timeout())));
    if (wait.ticket() != 0) {
      args.add("TICKET");
      args.add(Long.toUnsignedString(wait.ticket()));
    }
    args.addAll(kind.args());
    return args;
  }

  /** {@code DLOCK.FENCE resource owner token [PX ttl]}: 1 committed, 0 not held. Zero ttl: no PX. */
  static List<String> fence(String resource, String owner, long token, Duration ttl) {
    List<String> args = new ArrayList<>(List.of("DLOCK.FENCE", resource, owner, Long.toUnsignedString(token)));
    px(args, ttl);
    return args;
  }

  private static void px(List<String> args, Duration ttl) {
    if (ttl.toMillis() > 0) {
      args.add("PX");
      args.add(ms(ttl));
    }
  }

  /** {@code DLOCK.EXTEND resource owner ttl}: 1 extended, 0 not held. */
  static List<String> extend(String resource, String owner, Duration ttl) {
    return List.of("DLOCK.EXTEND", resource, owner, ms(ttl));
  }

  /** {@code DLOCK.RELEASE resource owner}: 1 released (one hold), 0 not held. */
  static List<String> release(String resource, String owner) {
    return List.of("DLOCK.RELEASE", resource, owner);
  }

  /**
   * {@code DLOCK.PROCLAIM resource owner token new-owner}: 1 when owner held the plain lock with
   * token (new-owner holds it now, same token and lease), 0 when not.
   */
  static List<String> proclaim(String resource, String owner, long token, String newOwner) {
    return List.of("DLOCK.PROCLAIM", resource, owner, Long.toUnsignedString(token), newOwner);
  }

  /** {@code DLOCK.STATUS resource}: nil when free, else the holder's fields in pairs. */
  static List<String> status(String resource) {
    return List.of("DLOCK.STATUS", resource);
  }

  /** {@code DLOCK.OBSERVE resource TIMEOUT ms}: the plain lock's holder at once (nil: free). */
  static List<String> observe(String resource, Duration timeout) {
    return List.of("DLOCK.OBSERVE", resource, "TIMEOUT", ms(timeout));
  }

  /**
   * {@code DLOCK.OBSERVE resource AFTER token OWNER owner TIMEOUT ms}: the holder at once when it
   * differs from {@code after}, else when it changes, its lease ends, or at the timeout. It
   * blocks its connection on the node.
   */
  static List<String> observe(String resource, ElectionRule.Seen after, Duration timeout) {
    return List.of("DLOCK.OBSERVE", resource, "AFTER", Long.toUnsignedString(after.token()), "OWNER",
        after.owner(), "TIMEOUT", ms(timeout));
  }

  // The commands of a set (several keys all or nothing, one token: docs/commands.md): `numkeys
  // key...` where a single lock names its resource; modes "" is every key exclusive.

  private static List<String> setArgs(String name, List<String> keys) {
    List<String> args = new ArrayList<>(List.of(name, Integer.toString(keys.size())));
    args.addAll(keys);
    return args;
  }

  /**
   * {@code DLOCK.ACQUIREALL numkeys key... owner ttl [MODES m] [WAIT timeout [TICKET t]]}: the
   * set's token, or nil when not every key is available.
   */
  static List<String> acquireAll(Sets.Members set, String owner, Duration ttl, java.util.Optional<Queued> wait) {
    List<String> args = setArgs("DLOCK.ACQUIREALL", set.keys());
    args.add(owner);
    args.add(ms(ttl));
    if (!set.modes().isEmpty()) {
      args.add("MODES");
      args.add(set.modes());
    }
    wait.ifPresent(w -> {
      args.add("WAIT");
      args.add(ms(w.timeout()));
      if (w.ticket() != 0) {
        args.add("TICKET");
        args.add(Long.toUnsignedString(w.ticket()));
      }
    });
    return args;
  }

  /** {@code DLOCK.RELEASEALL numkeys key... owner}: how many of the keys owner held. */
  static List<String> releaseAll(Sets.Members set, String owner) {
    List<String> args = setArgs("DLOCK.RELEASEALL", set.keys());
    args.add(owner);
    return args;
  }

  /** {@code DLOCK.EXTENDALL numkeys key... owner ttl}: 1 extended, 0 not held whole. */
  static List<String> extendAll(Sets.Members set, String owner, Duration ttl) {
    List<String> args = setArgs("DLOCK.EXTENDALL", set.keys());
    args.add(owner);
    args.add(ms(ttl));
    return args;
  }

  /** {@code DLOCK.FENCEALL numkeys key... owner token [PX ttl]}: 1 committed on every key, 0 not. */
  static List<String> fenceAll(Sets.Members set, String owner, long token, Duration ttl) {
    List<String> args = setArgs("DLOCK.FENCEALL", set.keys());
    args.add(owner);
    args.add(Long.toUnsignedString(token));
    px(args, ttl);
    return args;
  }
}
