package dev.dlock;

/** The module version this client was built with and tested against. */
public final class Version {
  /** The dlock release, the same in every client and the module's MODULE LIST. */
  public static final String VERSION = "0.5.0";

  private Version() {}
}
