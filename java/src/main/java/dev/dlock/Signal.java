package dev.dlock;

/** A one-way flag: raised once, read any time (the holder released: late grants are not its). */
final class Signal {
  private volatile boolean raised;

  void raise() {
    raised = true;
  }

  boolean raised() {
    return raised;
  }
}
