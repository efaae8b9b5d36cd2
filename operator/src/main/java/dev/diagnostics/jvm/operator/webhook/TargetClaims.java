package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.TargetRef;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Which JvmDiagnostics owns a workload, as this webhook replica knows it: its informer cache of the
 * resources, indexed by namespace, kind and name of the target ({@link #INDEX}: one lookup per
 * admission, whatever the namespace holds), and what this replica admitted in the last moments that
 * its cache does not hold yet.
 *
 * <p>The cache lags the API server by a watch event, so on its own it would let a second resource
 * for a workload in when it is created a moment after the first. Each admitted resource is
 * therefore recorded (name, uid, target) until the cache holds that version of it ({@link
 * #cached}), it is deleted, or {@link #KEEP} passes, whichever comes first; at most {@link #MAX}
 * records, the oldest dropped first. A record whose write then failed in the API server (another
 * webhook refused it, the name existed) counts for at most {@link #KEEP}. Other replicas do not see
 * these records: two resources for one workload admitted by two replicas within a watch event's
 * delay can both be stored, and the reconciler then lets only the oldest write.
 */
final class TargetClaims {
  /** The webhook's informer index: resources by namespace/kind/name of their target. */
  static final String INDEX = "jvmdiag-webhook-target";

  static final Duration KEEP = Duration.ofSeconds(30);
  static final int MAX = 4096;

  /** The resources the cache shows targeting a key of {@link #key}, from {@link #INDEX}. */
  interface Cache {
    List<JvmDiagnostics> targeting(String targetKey);
  }

  /**
   * The resource that owns a target; age: how long ago this replica admitted it, null if cached.
   */
  record Owner(String name, Duration age) {}

  private record Claim(String name, String uid, String target, long admitted) {}

  private final Cache cache;
  private final LongSupplier nanos;
  private final long keepNanos;
  private final int max;

  /** By namespace/name, oldest first (so expiry and eviction take from the head). */
  private final LinkedHashMap<String, Claim> byResource = new LinkedHashMap<>();

  /** Target key to the namespace/name of the resource last admitted for it. */
  private final Map<String, String> byTarget = new HashMap<>();

  TargetClaims(Cache cache) {
    this(cache, System::nanoTime, KEEP, MAX);
  }

  TargetClaims(Cache cache, LongSupplier nanos, Duration keep, int max) {
    this.cache = cache;
    this.nanos = nanos;
    this.keepNanos = keep.toNanos();
    this.max = max;
  }

  static String key(String ns, TargetRef.Kind kind, String name) {
    return ns + "/" + kind.name() + "/" + name;
  }

  /** The index function for {@link #INDEX}. */
  static List<String> indexKeys(JvmDiagnostics r) {
    if (r.getSpec() == null) return List.of();
    TargetRef ref = r.getSpec().targetRef;
    if (ref == null || ref.kind == null || ref.name == null) return List.of();
    return List.of(key(r.getMetadata().getNamespace(), ref.kind, ref.name));
  }

  /**
   * The resource other than (ns, name) that owns the target, or null: one the cache shows on it
   * (not being deleted, and not moved away by an update this replica admitted since), else one this
   * replica admitted for it and its cache does not hold yet.
   */
  Owner owner(String ns, String name, TargetRef ref) {
    String target = key(ns, ref.kind, ref.name);
    List<JvmDiagnostics> cached = cache.targeting(target);
    synchronized (this) {
      return owner(ns, name, target, cached, nanos.getAsLong());
    }
  }

  /**
   * Records that (ns, name, uid) was admitted for the target, unless another resource owns it: then
   * that owner, and nothing is recorded. Checked and recorded under one lock, so of two admissions
   * of this replica racing for one target, one gets the owner back.
   */
  Owner claim(String ns, String name, String uid, TargetRef ref) {
    String target = key(ns, ref.kind, ref.name);
    List<JvmDiagnostics> cached = cache.targeting(target);
    synchronized (this) {
      long now = nanos.getAsLong();
      Owner other = owner(ns, name, target, cached, now);
      if (other != null) return other;
      String res = ns + "/" + name;
      remove(res);
      if (byResource.size() >= max) remove(byResource.keySet().iterator().next());
      byResource.put(res, new Claim(name, uid, target, now));
      byTarget.put(target, res);
      return null;
    }
  }

  /**
   * The cache now holds r (added or updated): a record of this version of it is no longer needed.
   */
  synchronized void cached(JvmDiagnostics r) {
    String res = r.getMetadata().getNamespace() + "/" + r.getMetadata().getName();
    Claim c = byResource.get(res);
    if (c != null && sameUid(c, r) && indexKeys(r).contains(c.target)) remove(res);
  }

  /** r was deleted: its record goes with it. */
  synchronized void deleted(JvmDiagnostics r) {
    String res = r.getMetadata().getNamespace() + "/" + r.getMetadata().getName();
    Claim c = byResource.get(res);
    if (c != null && sameUid(c, r)) remove(res);
  }

  /** Records kept now (after dropping the expired ones). */
  synchronized int size() {
    expire(nanos.getAsLong());
    return byResource.size();
  }

  private Owner owner(
      String ns, String name, String target, List<JvmDiagnostics> cached, long now) {
    expire(now);
    for (JvmDiagnostics other : cached) {
      String n = other.getMetadata().getName();
      if (n.equals(name) || other.getMetadata().getDeletionTimestamp() != null) continue;
      Claim moved = byResource.get(ns + "/" + n);
      if (moved != null && sameUid(moved, other) && !moved.target.equals(target)) continue;
      return new Owner(n, null);
    }
    String res = byTarget.get(target);
    if (res == null || res.equals(ns + "/" + name)) return null;
    Claim c = byResource.get(res);
    return new Owner(c.name, Duration.ofNanos(now - c.admitted));
  }

  private static boolean sameUid(Claim c, JvmDiagnostics r) {
    return c.uid == null || Objects.equals(c.uid, r.getMetadata().getUid());
  }

  private void expire(long now) {
    Iterator<Map.Entry<String, Claim>> it = byResource.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Claim> e = it.next();
      if (now - e.getValue().admitted < keepNanos) return;
      it.remove();
      byTarget.remove(e.getValue().target, e.getKey());
    }
  }

  private void remove(String res) {
    Claim c = byResource.remove(res);
    if (c != null) byTarget.remove(c.target, res);
  }
}
