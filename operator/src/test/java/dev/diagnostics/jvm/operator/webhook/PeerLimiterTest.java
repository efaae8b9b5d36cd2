package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The per-peer token bucket on a fake clock, and the flag's RATE/BURST text. */
class PeerLimiterTest {
  final AtomicLong now = new AtomicLong(1_000_000_000L);

  PeerLimiter limiter(double rate, int burst, int maxPeers) {
    return new PeerLimiter(new PeerRateLimit(rate, burst), maxPeers, now::get);
  }

  static InetAddress ip(String a) throws Exception {
    return InetAddress.getByName(a);
  }

  void advanceMillis(long ms) {
    now.addAndGet(ms * 1_000_000L);
  }

  int granted(PeerLimiter l, InetAddress peer, int tries) {
    int n = 0;
    for (int i = 0; i < tries; i++) if (l.tryAcquire(peer)) n++;
    return n;
  }

  @Test
  void aPeerGetsItsBurstAtOnceThenTheRate() throws Exception {
    PeerLimiter l = limiter(50, 100, 16);
    InetAddress pod = ip("10.1.2.3");
    assertThat(granted(l, pod, 1000)).isEqualTo(100);
    advanceMillis(100); // 5 tokens
    assertThat(granted(l, pod, 1000)).isEqualTo(5);
    advanceMillis(19); // 0.95 of a token: not yet
    assertThat(l.tryAcquire(pod)).isFalse();
    advanceMillis(1);
    assertThat(l.tryAcquire(pod)).isTrue();
    // a sustained flood: exactly the rate over 10 s
    int overTen = 0;
    for (int ms = 0; ms < 10_000; ms++) {
      advanceMillis(1);
      overTen += granted(l, pod, 3);
    }
    assertThat(overTen).isEqualTo(500);
  }

  @Test
  void aFloodingPeerTakesNothingFromAnother() throws Exception {
    PeerLimiter l = limiter(50, 100, 16);
    InetAddress pod = ip("10.1.2.3"), apiServer = ip("172.18.0.2");
    assertThat(granted(l, pod, 10_000)).isEqualTo(100);
    assertThat(granted(l, apiServer, 100)).isEqualTo(100);
    assertThat(l.tryAcquire(pod)).isFalse();
  }

  @Test
  void theBucketNeverHoldsMoreThanTheBurst() throws Exception {
    PeerLimiter l = limiter(50, 100, 16);
    InetAddress pod = ip("10.1.2.3");
    granted(l, pod, 100);
    advanceMillis(3_600_000);
    assertThat(granted(l, pod, 1000)).isEqualTo(100);
  }

  @Test
  void idlePeersAreDroppedAndTheMapIsBounded() throws Exception {
    PeerLimiter l = limiter(10, 10, 4);
    for (int i = 1; i <= 4; i++) assertThat(l.tryAcquire(ip("10.0.0." + i))).isTrue();
    assertThat(l.peers()).isEqualTo(4);
    // a fifth peer: the least recently seen goes (it had not refilled yet)
    assertThat(l.tryAcquire(ip("10.0.0.5"))).isTrue();
    assertThat(l.peers()).isEqualTo(4);
    // one second later every bucket has refilled: a full bucket is a new one, so all are dropped
    advanceMillis(1000);
    assertThat(l.tryAcquire(ip("10.0.0.9"))).isTrue();
    assertThat(l.peers()).isEqualTo(1);
  }

  @Test
  void aPeerDroppedWhileEmptyIsNotForgottenWhileItFloods() throws Exception {
    PeerLimiter l = limiter(1, 5, 4);
    InetAddress pod = ip("10.1.2.3");
    assertThat(granted(l, pod, 5)).isEqualTo(5);
    // three other peers come and go; the flooding one, seen last, is kept with its empty bucket
    for (int i = 1; i <= 3; i++) l.tryAcquire(ip("10.0.0." + i));
    assertThat(l.tryAcquire(pod)).isFalse();
    assertThat(l.tryAcquire(pod)).isFalse();
  }

  @Test
  void noLimitGrantsEverythingAndKeepsNothing() throws Exception {
    PeerLimiter l = new PeerLimiter(PeerRateLimit.NONE, 4, now::get);
    assertThat(granted(l, ip("10.1.2.3"), 10_000)).isEqualTo(10_000);
    assertThat(l.peers()).isZero();
  }

  @Test
  void theFlagsTextIsRateSlashBurst() {
    assertThat(PeerRateLimit.parse("50/100")).isEqualTo(new PeerRateLimit(50, 100));
    assertThat(PeerRateLimit.parse("0.5/1")).isEqualTo(new PeerRateLimit(0.5, 1));
    assertThat(PeerRateLimit.parse(" 0 ")).isEqualTo(PeerRateLimit.NONE);
    assertThat(new PeerRateLimit(50, 100)).hasToString("50/100");
    assertThat(new PeerRateLimit(0.5, 1)).hasToString("0.5/1");
    for (String bad : new String[] {"50", "50/0", "0/100", "-1/5", "a/b", "50/", "/100", "NaN/5"})
      assertThatThrownBy(() -> PeerRateLimit.parse(bad))
          .hasMessageContaining("is not RATE/BURST")
          .hasMessageContaining("e.g. 50/100; or 0 for no limit");
  }
}
