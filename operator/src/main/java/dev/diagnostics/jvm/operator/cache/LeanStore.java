package dev.diagnostics.jvm.operator.cache;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * An informer's item store that keeps each object only as far as the operator reads it: {@code
 * strip} drops the rest in place before the object is stored (and before the informer's handlers
 * see it, so the cache and the events agree). What is dropped is never written back: a write starts
 * from a fresh GET or is a server-side apply of our own fields only.
 *
 * <p>One store per informer: fabric8 drops from a store the keys a relist did not return, so two
 * informers (two namespaces) sharing one store would drop each other's objects.
 */
public final class LeanStore<T extends HasMetadata> implements ItemStore<T> {
  private final BasicItemStore<T> items = new BasicItemStore<>(Cache::metaNamespaceKeyFunc);
  private final Consumer<T> strip;

  public LeanStore(Consumer<T> strip) {
    this.strip = strip;
  }

  /**
   * A lean store for the informers of these namespaces (JOSDK's set: one entry for all of them),
   * when that is one informer; null (full objects) for several, as JOSDK gives each informer of an
   * event source the same store.
   */
  public static <T extends HasMetadata> LeanStore<T> forNamespaces(
      Set<String> namespaces, Consumer<T> strip) {
    return namespaces.size() <= 1 ? new LeanStore<>(strip) : null;
  }

  @Override
  public String getKey(T obj) {
    return items.getKey(obj);
  }

  @Override
  public T put(String key, T obj) {
    strip.accept(obj);
    return items.put(key, obj);
  }

  @Override
  public T remove(String key) {
    return items.remove(key);
  }

  @Override
  public Stream<String> keySet() {
    return items.keySet();
  }

  @Override
  public Stream<T> values() {
    return items.values();
  }

  @Override
  public int size() {
    return items.size();
  }

  @Override
  public T get(String key) {
    return items.get(key);
  }
}
