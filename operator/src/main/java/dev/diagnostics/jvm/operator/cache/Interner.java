package dev.diagnostics.jvm.operator.cache;

import java.lang.ref.WeakReference;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * One instance for every equal value still in use: the replicas of one pod template have equal lean
 * specs, labels and annotations, so 50,000 pods of 10,000 workloads keep 10,000 of each, not
 * 50,000. Entries are weak: a value no cached object holds any more is collected with its entry.
 *
 * <p>An interned value is shared by every object that holds it, so it must never be changed in
 * place; the lean pod's maps and lists are unmodifiable, and nothing writes to a cached object (see
 * {@link LeanStore}).
 */
final class Interner<T> {
  private final Map<T, WeakReference<T>> canonical = new WeakHashMap<>();

  /** The instance equal to {@code value} already in use, or {@code value} itself (then kept). */
  synchronized T intern(T value) {
    if (value == null) return null;
    WeakReference<T> ref = canonical.get(value);
    T kept = ref == null ? null : ref.get();
    if (kept != null) return kept;
    canonical.put(value, new WeakReference<>(value));
    return value;
  }

  /** Distinct values in use (entries of collected values may linger until the map is next used). */
  synchronized int size() {
    return canonical.size();
  }
}
