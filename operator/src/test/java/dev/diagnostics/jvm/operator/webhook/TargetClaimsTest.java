package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Which resource owns a workload for the validating webhook: the cache's index by target and the
 * record of recent admissions, with a clock of the test's own and no API server.
 */
class TargetClaimsTest {
  final List<JvmDiagnostics> cache = new ArrayList<>();
  final AtomicLong now = new AtomicLong(1_000_000_000L);
  final TargetClaims claims =
      new TargetClaims(
          key -> cache.stream().filter(r -> TargetClaims.indexKeys(r).contains(key)).toList(),
          now::get,
          Duration.ofSeconds(30),
          3);

  static TargetRef ref(String name) {
    TargetRef t = new TargetRef();
    t.kind = TargetRef.Kind.Deployment;
    t.name = name;
    return t;
  }

  static JvmDiagnostics resource(String name, String uid, String target) {
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(
        new ObjectMetaBuilder().withNamespace("shop").withName(name).withUid(uid).build());
    r.setSpec(new JvmDiagnosticsSpec());
    r.getSpec().targetRef = target == null ? null : ref(target);
    return r;
  }

  void advance(Duration d) {
    now.addAndGet(d.toNanos());
  }

  String owner(String name, String target) {
    TargetClaims.Owner o = claims.owner("shop", name, ref(target));
    return o == null ? null : o.name();
  }

  String claim(String name, String uid, String target) {
    TargetClaims.Owner o = claims.claim("shop", name, uid, ref(target));
    return o == null ? null : o.name();
  }

  @Test
  void theIndexKeyIsNamespaceKindAndName() {
    assertThat(TargetClaims.indexKeys(resource("a", "u1", "checkout")))
        .containsExactly("shop/Deployment/checkout");
    assertThat(TargetClaims.indexKeys(resource("a", "u1", null))).isEmpty();
    JvmDiagnostics noSpec = resource("a", "u1", null);
    noSpec.setSpec(null);
    assertThat(TargetClaims.indexKeys(noSpec)).isEmpty();
  }

  @Test
  void theCacheNamesTheOwnerButNeverTheResourceItselfNorOneBeingDeleted() {
    cache.add(resource("a", "u1", "checkout"));
    assertThat(owner("b", "checkout")).isEqualTo("a");
    assertThat(claims.owner("shop", "b", ref("checkout")).age()).isNull();
    assertThat(owner("a", "checkout")).isNull();
    assertThat(owner("b", "cart")).isNull();
    cache.get(0).getMetadata().setDeletionTimestamp("2026-01-02T12:00:00Z");
    assertThat(owner("b", "checkout")).isNull();
  }

  @Test
  void anAdmissionCountsUntilTheCacheHoldsIt() {
    assertThat(claim("a", "u1", "checkout")).isNull();
    advance(Duration.ofSeconds(2));
    assertThat(claim("b", "u2", "checkout")).isEqualTo("a");
    assertThat(claims.owner("shop", "b", ref("checkout")).age()).isEqualTo(Duration.ofSeconds(2));
    assertThat(claim("a", "u1", "checkout")).as("its own record holds nothing back").isNull();

    // a version of "a" that targets something else (an older one): the record stays
    claims.cached(resource("a", "u1", "cart"));
    assertThat(claims.size()).isEqualTo(1);
    // another resource of that name (another uid): the record stays
    claims.cached(resource("a", "u0", "checkout"));
    assertThat(claims.size()).isEqualTo(1);
    // the admitted one: the cache answers from now on
    JvmDiagnostics a = resource("a", "u1", "checkout");
    cache.add(a);
    claims.cached(a);
    assertThat(claims.size()).isZero();
    assertThat(claim("b", "u2", "checkout")).isEqualTo("a");
  }

  @Test
  void aRecordExpiresAfterItsTime() {
    claim("a", "u1", "checkout");
    advance(Duration.ofSeconds(29));
    assertThat(owner("b", "checkout")).isEqualTo("a");
    advance(Duration.ofSeconds(1));
    assertThat(owner("b", "checkout")).isNull();
    assertThat(claims.size()).isZero();
  }

  @Test
  void aDeletedResourceLeavesItsRecord() {
    claim("a", "u1", "checkout");
    claims.deleted(resource("a", "u0", "checkout"));
    assertThat(owner("b", "checkout")).as("another resource of that name").isEqualTo("a");
    claims.deleted(resource("a", "u1", "checkout"));
    assertThat(owner("b", "checkout")).isNull();
  }

  @Test
  void theRecordIsBoundedOldestFirst() {
    claim("a", "u1", "w1");
    advance(Duration.ofMillis(1));
    claim("b", "u2", "w2");
    claim("c", "u3", "w3");
    claim("d", "u4", "w4");
    assertThat(claims.size()).isEqualTo(3);
    assertThat(owner("x", "w1")).as("the oldest went").isNull();
    assertThat(owner("x", "w2")).isEqualTo("b");
    assertThat(owner("x", "w4")).isEqualTo("d");
  }

  @Test
  void aResourceMovedAwayNoLongerHoldsItsOldTarget() {
    cache.add(resource("a", "u1", "checkout"));
    // an update of "a" onto another workload, admitted; the cache still has it on checkout
    assertThat(claim("a", "u1", "cart")).isNull();
    assertThat(owner("b", "checkout")).isNull();
    assertThat(owner("b", "cart")).isEqualTo("a");
    // a create named "a" again (another uid: it will fail, the name exists) moves nothing
    TargetClaims fresh =
        new TargetClaims(
            key -> cache.stream().filter(r -> TargetClaims.indexKeys(r).contains(key)).toList());
    assertThat(fresh.claim("shop", "a", "u9", ref("cart"))).isNull();
    assertThat(fresh.owner("shop", "b", ref("checkout")).name()).isEqualTo("a");
  }

  @Test
  void ofAdmissionsRacingForOneWorkloadExactlyOneClaimsIt() throws Exception {
    TargetClaims shared = new TargetClaims(key -> List.of());
    int n = 16;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      for (int round = 0; round < 50; round++) {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<TargetClaims.Owner>> results = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          String name = "r" + round + "-" + i;
          String target = "w" + round;
          results.add(
              pool.submit(() -> {
                start.await();
                return shared.claim("shop", name, name, ref(target));
              }));
        }
        start.countDown();
        int won = 0;
        for (Future<TargetClaims.Owner> f : results) if (f.get(10, TimeUnit.SECONDS) == null) won++;
        assertThat(won).as("round %d", round).isEqualTo(1);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
