package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.cache.Lean;
import dev.diagnostics.jvm.operator.cache.LeanStore;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.lang.management.ManagementFactory;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * The heap a cache retains: N Deployments (test resource cache/deployment.json) and N labelled pods
 * (cache/pod.json, 5 replicas of each of N / 5 Deployments), each its own copy as an informer
 * decodes it, in the store a full cache uses and in the lean one. Run by hand: java -cp
 * test-classes:classes:DEPS dev.diagnostics.jvm.operator.reconciler.CacheFootprint [N].
 */
public final class CacheFootprint {
  /** Pods per Deployment. */
  static final int REPLICAS = 5;

  private CacheFootprint() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    String json = LeanTargetTest.deploymentJson();
    KubernetesSerialization serialization = new KubernetesSerialization();
    System.out.printf("%d Deployments of %d bytes (JSON as sent)%n", n, compact(json).length());
    IntFunction<String> deployment = i -> json.replace("checkout", "app-" + i);
    measure("full", n, deployment, Deployment.class, null, serialization);
    measure("lean", n, deployment, Deployment.class, Lean::deployment, serialization);
    String pod = resource("/cache/pod.json");
    System.out.printf(
        "%d labelled pods of %d bytes (JSON as sent), %d replicas of each of %d Deployments%n",
        n, compact(pod).length(), REPLICAS, n / REPLICAS);
    // pod i is replica i % REPLICAS of Deployment i / REPLICAS: its own name, uid,
    // resourceVersion and service account token volume, its template's labels, annotations and
    // spec
    IntFunction<String> replica =
        i ->
            pod.replace("x2k8q", String.format("%05d", i))
                .replace("x7k2p", String.format("%05x", i))
                .replace("0b3c1d9e-", String.format("%08x-", i))
                .replace("48213999", Integer.toString(48_000_000 + i))
                .replace("checkout", "app-" + i / REPLICAS);
    measure("full", n, replica, Pod.class, null, serialization);
    measure("lean", n, replica, Pod.class, Lean::pod, serialization);
  }

  static String resource(String name) throws java.io.IOException {
    try (var in = CacheFootprint.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
  }

  private static <T extends HasMetadata> void measure(
      String kind,
      int n,
      IntFunction<String> json,
      Class<T> type,
      Consumer<T> strip,
      KubernetesSerialization serialization)
      throws Exception {
    {
      long before = used();
      ItemStore<T> store =
          strip == null
              ? new BasicItemStore<>(Cache::metaNamespaceKeyFunc)
              : new LeanStore<>(strip);
      for (int i = 0; i < n; i++) {
        T d = serialization.unmarshal(json.apply(i), type);
        store.put(store.getKey(d), d);
      }
      long retained = used() - before;
      System.out.printf(
          "%s: %d objects retain %.1f MiB (%d bytes each)%n",
          kind, store.size(), retained / 1048576.0, retained / n);
      java.lang.ref.Reference.reachabilityFence(store);
    }
  }

  private static String compact(String json) {
    return new KubernetesSerialization().asJson(new KubernetesSerialization().unmarshal(json));
  }

  private static long used() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(100);
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
