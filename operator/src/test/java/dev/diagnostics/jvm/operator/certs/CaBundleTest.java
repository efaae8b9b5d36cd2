package dev.diagnostics.jvm.operator.certs;

import static org.assertj.core.api.Assertions.assertThat;

import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which CAs the caBundle holds during and after a CA change, and when the previous ones go. */
class CaBundleTest {
  static final Duration GRACE = Duration.ofHours(2);
  static final Instant T0 = Instant.now();
  static final X509Certificate CA1 = ca("ca-1", Duration.ofDays(3650));
  static final X509Certificate CA2 = ca("ca-2", Duration.ofDays(3650));
  static final X509Certificate CA3 = ca("ca-3", Duration.ofDays(3650));
  static final X509Certificate CA4 = ca("ca-4", Duration.ofDays(3650));
  static final X509Certificate CA5 = ca("ca-5", Duration.ofDays(3650));

  static X509Certificate ca(String cn, Duration validity) {
    return CertificateAuthority.newCa(cn, validity).cert();
  }

  @Test
  void oneCaAloneIsTheWholeBundle() {
    CaBundle b = CaBundle.of(CA1);
    assertThat(b.trusted(T0)).containsExactly(CA1);
    assertThat(b.previousDue(T0)).isFalse();
    assertThat(b.nextChange(T0)).isNull();
    assertThat(b.pem(T0)).isEqualTo(CertificateAuthority.pem(CA1));
  }

  @Test
  void aNewCaIsPublishedWithThePreviousOneFirstNewCaFirstUntilTheGracePeriodEnds() {
    CaBundle b = CaBundle.of(CA1).rotate(CA2, T0, GRACE);
    assertThat(b.current()).isEqualTo(CA2);
    assertThat(b.trusted(T0)).containsExactly(CA2, CA1);
    assertThat(b.pem(T0)).isEqualTo(CertificateAuthority.pem(CA2) + CertificateAuthority.pem(CA1));
    assertThat(b.trusted(T0.plus(GRACE).minusSeconds(1))).containsExactly(CA2, CA1);
    assertThat(b.trusts(CA1, T0.plus(GRACE).minusSeconds(1))).isTrue();
    assertThat(b.nextChange(T0)).isEqualTo(T0.plus(GRACE));
    assertThat(b.previousDue(T0.plus(GRACE).minusSeconds(1))).isFalse();
  }

  @Test
  void thePreviousCaIsDroppedWhenTheGracePeriodEnds() {
    CaBundle b = CaBundle.of(CA1).rotate(CA2, T0, GRACE);
    Instant end = T0.plus(GRACE);
    assertThat(b.trusted(end)).containsExactly(CA2);
    assertThat(b.trusts(CA1, end)).isFalse();
    assertThat(b.previousDue(end)).isTrue();
    CaBundle pruned = b.pruned(end);
    assertThat(pruned.previous()).isEmpty();
    assertThat(pruned.previousDue(end)).isFalse();
    assertThat(pruned.nextChange(end)).isNull();
  }

  @Test
  void aSecondChangeWithinTheGracePeriodKeepsBothOlderCasAndRestartsTheGracePeriod() {
    CaBundle b = CaBundle.of(CA1).rotate(CA2, T0, GRACE);
    Instant later = T0.plus(Duration.ofMinutes(30));
    CaBundle c = b.rotate(CA3, later, GRACE);
    assertThat(c.trusted(later)).containsExactly(CA3, CA2, CA1);
    assertThat(c.previousUntil()).isEqualTo(later.plus(GRACE));
    // after the first change's grace period, still within the second's: all three
    assertThat(c.trusted(T0.plus(GRACE).plusSeconds(1))).containsExactly(CA3, CA2, CA1);
  }

  @Test
  void aChangeAfterTheGracePeriodKeepsOnlyTheCaItReplaces() {
    CaBundle b = CaBundle.of(CA1).rotate(CA2, T0, GRACE);
    Instant later = T0.plus(GRACE).plusSeconds(1);
    assertThat(b.rotate(CA3, later, GRACE).trusted(later)).containsExactly(CA3, CA2);
  }

  @Test
  void atMostThreePreviousCasNewestFirst() {
    CaBundle b = CaBundle.of(CA1);
    Instant t = T0;
    for (X509Certificate next : List.of(CA2, CA3, CA4, CA5)) {
      t = t.plusSeconds(60);
      b = b.rotate(next, t, GRACE);
    }
    assertThat(b.trusted(t)).containsExactly(CA5, CA4, CA3, CA2);
  }

  @Test
  void rotatingBackToAPreviousCaDoesNotListItTwice() {
    CaBundle b = CaBundle.of(CA1).rotate(CA2, T0, GRACE).rotate(CA1, T0, GRACE);
    assertThat(b.trusted(T0)).containsExactly(CA1, CA2);
  }

  @Test
  void aSecretReplacedByAnotherCaKeepsTheCaAReplicaStillServes() {
    // the Secret now names only CA3; this replica serves a certificate of CA2 and knew CA1 with it
    CaBundle replaced = CaBundle.of(CA3);
    CaBundle kept = replaced.keeping(List.of(CA2, CA1), T0, GRACE);
    assertThat(kept.current()).isEqualTo(CA3);
    assertThat(kept.trusted(T0)).containsExactly(CA3, CA2, CA1);
    assertThat(kept.previousUntil()).isEqualTo(T0.plus(GRACE));
    assertThat(kept.trusted(T0.plus(GRACE))).containsExactly(CA3);
  }

  @Test
  void keepingWhatIsAlreadyTrustedChangesNothing() {
    CaBundle b = CaBundle.of(CA1).rotate(CA2, T0, GRACE);
    assertThat(b.keeping(List.of(CA2, CA1), T0.plusSeconds(10), GRACE)).isSameAs(b);
    assertThat(b.keeping(List.of(CA2), T0.plusSeconds(10), GRACE)).isSameAs(b);
  }

  @Test
  void anExpiredPreviousCaIsNotPublishedAndEndsTheBundlesNextChangeEarly() {
    X509Certificate shortLived = ca("short", Duration.ofMinutes(30));
    CaBundle b = CaBundle.of(shortLived).rotate(CA2, T0, GRACE);
    Instant expiry = shortLived.getNotAfter().toInstant();
    assertThat(b.nextChange(T0)).isEqualTo(expiry);
    assertThat(b.trusted(expiry.minusSeconds(1))).containsExactly(CA2, shortLived);
    assertThat(b.trusted(expiry)).containsExactly(CA2);
    assertThat(b.previousDue(expiry)).isTrue();
  }
}
