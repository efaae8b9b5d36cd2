package dev.diagnostics.jvm.operator.reconciler;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which event a new one repeats: the same resource (uid), type, reason and message within {@link
 * #WINDOW_NANOS} of the last one counts up that event (count, lastTimestamp) instead of creating
 * another, as the kubelet and kube-controller-manager do. At most {@link #MAX} remembered, least
 * recently seen dropped first, so memory stays bounded whatever the number of resources.
 */
final class EventAggregator {
  static final long WINDOW_NANOS = 10L * 60 * 1_000_000_000L;
  static final int MAX = 4096;

  /** An event sent: its name, its count so far, when it was last sent (nanos). */
  record Sent(String name, int count, long at) {}

  private final int max;
  private final Map<String, Sent> sent;

  EventAggregator() {
    this(MAX);
  }

  EventAggregator(int max) {
    this.max = max;
    this.sent =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Sent> eldest) {
            return size() > EventAggregator.this.max;
          }
        };
  }

  static String key(String uid, boolean normal, String reason, String message) {
    return uid + "\n" + normal + "\n" + reason + "\n" + message;
  }

  /** The event this one repeats, or null: create a new one. */
  synchronized Sent repeats(String key, long now) {
    Sent s = sent.get(key);
    if (s == null || now - s.at() > WINDOW_NANOS) return null;
    return s;
  }

  /** Sent (created, or counted up to count). */
  synchronized void sent(String key, String name, int count, long now) {
    sent.put(key, new Sent(name, count, now));
  }

  /** The event is gone (deleted, expired): the next repeat creates a new one. */
  synchronized void forget(String key) {
    sent.remove(key);
  }

  synchronized int size() {
    return sent.size();
  }
}
