package dev.diagnostics.jvm.operator.certs;

import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The CAs the webhook registrations trust (their caBundle): the current CA, which signs the serving
 * certificates being issued, and during a CA change the previous CAs, which sign the certificates
 * some replica may still serve. The previous ones are trusted until {@code previousUntil} (a grace
 * period from the last CA change, the same for every replica since they share the Secret), then
 * dropped. No decision here reads a clock: the time is an argument.
 *
 * @param current the CA that signs new serving certificates
 * @param previous CAs replaced by it, newest first, at most {@link #MAX_PREVIOUS}
 * @param previousUntil when the previous CAs stop being trusted
 */
public record CaBundle(
    X509Certificate current, List<X509Certificate> previous, Instant previousUntil) {
  /** A CA changed three times within one grace period still leaves every replica trusted. */
  public static final int MAX_PREVIOUS = 3;

  public CaBundle {
    previous = List.copyOf(previous);
    if (previousUntil == null) previousUntil = Instant.EPOCH;
  }

  /** Only this CA. */
  public static CaBundle of(X509Certificate current) {
    return new CaBundle(current, List.of(), Instant.EPOCH);
  }

  /**
   * The CAs to publish at {@code now}: the current one first, then each previous one while the
   * grace period lasts and it has not expired itself.
   */
  public List<X509Certificate> trusted(Instant now) {
    List<X509Certificate> out = new ArrayList<>();
    out.add(current);
    if (now.isBefore(previousUntil)) {
      for (X509Certificate ca : previous) {
        if (!out.contains(ca) && now.isBefore(ca.getNotAfter().toInstant())) out.add(ca);
      }
    }
    return out;
  }

  public boolean trusts(X509Certificate ca, Instant now) {
    return ca != null && trusted(now).contains(ca);
  }

  /**
   * {@code next} becomes the current CA; the current one and the previous ones still trusted stay
   * trusted for {@code grace} from {@code now}.
   */
  public CaBundle rotate(X509Certificate next, Instant now, Duration grace) {
    List<X509Certificate> kept = new ArrayList<>(trusted(now));
    kept.remove(next);
    return new CaBundle(next, cap(kept), now.plus(grace));
  }

  /**
   * The same current CA, with {@code cas} (ones a replica may still serve a certificate of, that
   * this bundle may no longer trust) added as the newest previous CAs, all trusted for {@code
   * grace} from {@code now}.
   */
  public CaBundle keeping(List<X509Certificate> cas, Instant now, Duration grace) {
    List<X509Certificate> kept = new ArrayList<>();
    for (X509Certificate ca : cas) if (!ca.equals(current) && !kept.contains(ca)) kept.add(ca);
    List<X509Certificate> t = trusted(now);
    for (X509Certificate p : t.subList(1, t.size())) if (!kept.contains(p)) kept.add(p);
    if (kept.equals(t.subList(1, t.size())) && kept.equals(previous)) return this;
    return new CaBundle(current, cap(kept), now.plus(grace));
  }

  /**
   * Previous CAs are held that are no longer trusted at {@code now}: time to rewrite without them.
   */
  public boolean previousDue(Instant now) {
    return !previous.isEmpty() && trusted(now).size() < previous.size() + 1;
  }

  /** What the Secret keeps at {@code now}: the previous CAs that are still trusted. */
  public CaBundle pruned(Instant now) {
    List<X509Certificate> t = trusted(now);
    List<X509Certificate> kept = t.subList(1, t.size());
    return new CaBundle(current, kept, kept.isEmpty() ? Instant.EPOCH : previousUntil);
  }

  /** The next time {@link #trusted} changes on its own (a grace period or a previous CA ending). */
  public Instant nextChange(Instant now) {
    Instant next = null;
    for (X509Certificate ca : trusted(now).subList(1, trusted(now).size())) {
      Instant end = ca.getNotAfter().toInstant();
      if (end.isAfter(previousUntil)) end = previousUntil;
      if (next == null || end.isBefore(next)) next = end;
    }
    return next;
  }

  /** The caBundle: the PEM of each trusted CA, current first. */
  public String pem(Instant now) {
    StringBuilder b = new StringBuilder();
    for (X509Certificate ca : trusted(now)) b.append(CertificateAuthority.pem(ca));
    return b.toString();
  }

  private static List<X509Certificate> cap(List<X509Certificate> cas) {
    return cas.size() <= MAX_PREVIOUS ? cas : cas.subList(0, MAX_PREVIOUS);
  }
}
