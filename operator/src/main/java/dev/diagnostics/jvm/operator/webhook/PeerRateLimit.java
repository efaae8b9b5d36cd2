package dev.diagnostics.jvm.operator.webhook;

/**
 * How many webhook requests one peer address may send: {@link #burst()} at once, then {@link
 * #perSecond()} a second ({@link PeerLimiter}); {@link #NONE}: no limit.
 */
public record PeerRateLimit(double perSecond, int burst) {
  public static final PeerRateLimit NONE = new PeerRateLimit(0, 0);

  public PeerRateLimit {
    if (perSecond < 0 || burst < 0 || (perSecond > 0) != (burst > 0))
      throw new IllegalArgumentException(
          "a rate and a burst both above 0, or 0 for no limit: got " + perSecond + "/" + burst);
  }

  public boolean limited() {
    return perSecond > 0;
  }

  /**
   * "RATE/BURST" (requests a second per peer, and how many at once), e.g. "50/100"; "0": no limit.
   */
  public static PeerRateLimit parse(String text) {
    String t = text.trim();
    if (t.equals("0")) return NONE;
    int slash = t.indexOf('/');
    try {
      if (slash > 0) {
        double rate = Double.parseDouble(t.substring(0, slash));
        int burst = Integer.parseInt(t.substring(slash + 1));
        if (rate > 0 && burst >= 1 && Double.isFinite(rate)) return new PeerRateLimit(rate, burst);
      }
    } catch (NumberFormatException e) {
      // the message below
    }
    throw new IllegalArgumentException(
        "\""
            + text
            + "\" is not RATE/BURST (requests a second per peer address above 0, then how many"
            + " at once, at least 1), e.g. 50/100; or 0 for no limit");
  }

  @Override
  public String toString() {
    return limited()
        ? (perSecond == Math.rint(perSecond)
                ? String.valueOf((long) perSecond)
                : String.valueOf(perSecond))
            + "/"
            + burst
        : "0";
  }
}
