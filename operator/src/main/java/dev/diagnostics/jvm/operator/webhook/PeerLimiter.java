package dev.diagnostics.jvm.operator.webhook;

import java.net.InetAddress;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * A token bucket per peer address: each peer may send {@link PeerRateLimit#burst()} requests at
 * once and {@link PeerRateLimit#perSecond()} a second after that. The webhook's only legitimate
 * caller is the API server, from few addresses; anything else that reaches the port (a pod, when no
 * NetworkPolicy keeps it out) gets no more than its own bucket, so a flood from one pod neither
 * takes the answers of the others nor turns into as many calls to the API server.
 *
 * <p>At most {@code maxPeers} buckets are kept, least recently seen first out. A bucket that has
 * refilled to its burst is the same as a new one, so an idle peer is dropped as soon as it is the
 * least recently seen; a peer dropped before its bucket refilled (more than maxPeers peers sending
 * at once) starts again with a full one, which is the most a crowd of addresses can gain.
 * Thread-safe; every call is O(1) amortised under one lock.
 */
final class PeerLimiter {
  static final int MAX_PEERS = 1024;

  private final PeerRateLimit limit;
  private final int maxPeers;
  private final LongSupplier nanos;
  private final double nanosPerToken;
  private final LinkedHashMap<InetAddress, Bucket> buckets = new LinkedHashMap<>(64, 0.75f, true);

  private static final class Bucket {
    double tokens;
    long at; // nanos when tokens was last brought up to date

    Bucket(double tokens, long at) {
      this.tokens = tokens;
      this.at = at;
    }
  }

  PeerLimiter(PeerRateLimit limit) {
    this(limit, MAX_PEERS, System::nanoTime);
  }

  PeerLimiter(PeerRateLimit limit, int maxPeers, LongSupplier nanos) {
    this.limit = limit;
    this.maxPeers = maxPeers;
    this.nanos = nanos;
    this.nanosPerToken = limit.limited() ? 1e9 / limit.perSecond() : 0;
  }

  PeerRateLimit limit() {
    return limit;
  }

  /** Takes one request from peer's bucket; false: over its limit, refuse it. */
  boolean tryAcquire(InetAddress peer) {
    if (!limit.limited()) return true;
    long now = nanos.getAsLong();
    synchronized (buckets) {
      dropIdle(now);
      Bucket b = buckets.get(peer);
      if (b == null) {
        b = new Bucket(limit.burst(), now);
        buckets.put(peer, b);
        if (buckets.size() > maxPeers) {
          Iterator<InetAddress> eldest = buckets.keySet().iterator();
          eldest.next();
          eldest.remove();
        }
      } else {
        refill(b, now);
      }
      if (b.tokens < 1) return false;
      b.tokens -= 1;
      return true;
    }
  }

  /** Peers with a bucket (for tests). */
  int peers() {
    synchronized (buckets) {
      return buckets.size();
    }
  }

  private void refill(Bucket b, long now) {
    long elapsed = now - b.at;
    if (elapsed <= 0) return;
    b.tokens = Math.min(limit.burst(), b.tokens + elapsed / nanosPerToken);
    b.at = now;
  }

  /** Least recently seen first: stops at the first bucket that has not refilled yet. */
  private void dropIdle(long now) {
    for (Iterator<Map.Entry<InetAddress, Bucket>> it = buckets.entrySet().iterator();
        it.hasNext(); ) {
      Bucket b = it.next().getValue();
      double refilled = b.tokens + (now - b.at) / nanosPerToken;
      if (refilled < limit.burst()) return;
      it.remove();
    }
  }
}
