package dev.dlock;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The pure part of leader election (go/election.go, client/src/election.rs;
 * conformance/leaders.json): who leads, from what each node holds, by one rule for reading
 * ({@code leader}) and following ({@code observe}). A campaign is a queued exclusive lock on the
 * election's name whose owner carries the candidate's value ({@code "<id> <value>"}); the
 * leader's epoch is its fencing token. The campaign, leadership and observation (I/O) build on
 * this.
 */
final class ElectionRule {
  /**
   * The longest value a candidate may carry: the owner (at most 256 bytes on the nodes) also
   * holds the candidate's id, its round and a space.
   */
  static final int MAX_VALUE_LEN = 200;

  private ElectionRule() {}

  /** One node's holder of the election's lock: its owner and token (unsigned). */
  record Seen(String owner, long token) {}

  /**
   * What one node said: no answer ({@link #noAnswer}), free ({@link #free}), or held
   * ({@link #held}).
   */
  record View(boolean answered, Optional<Seen> holder) {
    static View noAnswer() {
      return new View(false, Optional.empty());
    }

    static View free() {
      return new View(true, Optional.empty());
    }

    static View held(String owner, long token) {
      return new View(true, Optional.of(new Seen(owner, token)));
    }
  }

  /** Who leads: {@code known} false when fewer than needed answered; else the leader, if any. */
  record Verdict(boolean known, Optional<Leader> leader) {}

  /** Splits an owner into the candidate id and the value, which follows the first space. */
  static String[] splitOwner(String owner) {
    int i = owner.indexOf(' ');
    return i >= 0 ? new String[] {owner.substring(0, i), owner.substring(i + 1)} : new String[] {owner, ""};
  }

  /** Refuses a name or value the nodes would refuse, before any node is asked. */
  static void check(String name, String value) {
    if (name == null || name.isEmpty()) {
      throw new InvalidArgumentException("an election needs a name");
    }
    Checks.checkText("an election's name", name);
    checkValue(value);
  }

  /** A leader's value: at most {@link #MAX_VALUE_LEN} bytes. */
  static void checkValue(String value) {
    if (value != null) {
      Checks.checkText("a leader's value", value);
    }
    int bytes = value == null ? 0 : value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_VALUE_LEN) {
      throw new InvalidArgumentException("a leader's value is at most " + MAX_VALUE_LEN + " bytes, got " + bytes);
    }
  }

  /**
   * Who leads, from what each node holds: the candidate holding on {@code needed} nodes, whatever
   * its tokens (see {@link #pick}); none when nobody does; unknown when fewer than needed
   * answered. {@code previous}: the leader seen before, if any.
   */
  static Verdict leaderView(List<View> nodes, int needed, Optional<Leader> previous) {
    List<Leader> holders = new ArrayList<>();
    int answered = 0;
    for (View n : nodes) {
      if (!n.answered()) {
        continue;
      }
      answered++;
      n.holder().ifPresent(h -> {
        String[] idValue = splitOwner(h.owner());
        holders.add(new Leader(idValue[0], idValue[1], h.token()));
      });
    }
    if (answered < needed) {
      return new Verdict(false, Optional.empty());
    }
    for (Leader h : holders) {
      if (count(holders, o -> o.id().equals(h.id())) >= needed) {
        return new Verdict(true, Optional.of(pick(holders, h, needed, previous)));
      }
    }
    return new Verdict(true, Optional.empty());
  }

  private static int count(List<Leader> holders, Predicate<Leader> match) {
    return (int) holders.stream().filter(match).count();
  }

  /**
   * The leader {@code first.id()}: its epoch the token it holds on needed nodes (the committed
   * one), else the previous leader's while the same candidate still holds it, else its smallest
   * (a node granted late keeps its own larger token, so with committed nodes down the epoch is on
   * fewer); its value the one it holds on needed nodes, else the previous leader's while a
   * proclamation spreads, else the first node's.
   */
  private static Leader pick(List<Leader> holders, Leader first, int needed, Optional<Leader> previous) {
    String id = first.id();
    List<Leader> own = holders.stream().filter(o -> o.id().equals(id)).toList();
    Optional<Long> epoch = own.stream().map(Leader::epoch)
        .filter(e -> count(own, p -> p.epoch() == e) >= needed).findFirst();
    if (epoch.isEmpty()) {
      // A leadership's epoch never changes while it lasts: the one already seen is kept while a
      // node holds it (a resignation may release the epoch's nodes first).
      epoch = previous.filter(p -> p.id().equals(id)).map(Leader::epoch)
          .filter(e -> own.stream().anyMatch(o -> o.epoch() == e));
    }
    long chosen = epoch.orElseGet(() -> own.stream().map(Leader::epoch)
        .min(Long::compareUnsigned).orElse(first.epoch()));
    String value = first.value();
    if (previous.isPresent() && previous.get().id().equals(id) && previous.get().epoch() == chosen) {
      value = previous.get().value();
    }
    for (Leader o : own) {
      if (count(own, p -> p.value().equals(o.value())) >= needed) {
        value = o.value();
        break;
      }
    }
    return new Leader(id, value, chosen);
  }
}
