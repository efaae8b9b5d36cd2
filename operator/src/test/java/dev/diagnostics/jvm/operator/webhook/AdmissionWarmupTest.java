package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class AdmissionWarmupTest {
  @Test
  void everySyntheticAdmissionTakesTheMutationPath() {
    // a warm-up that only skipped (bad label, unknown resource) would compile the wrong path
    AdmissionWarmup.Result r = AdmissionWarmup.run("jvmdiag/agent:test", 60);
    assertThat(r.admissions()).isEqualTo(60);
    assertThat(r.mutated()).isEqualTo(60);
  }

  @Test
  void reviewsAreWellFormedAndVaried() throws Exception {
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    var shapes = new java.util.HashSet<Integer>();
    for (int i = 0; i < 12; i++) {
      var pod = json.readTree(AdmissionWarmup.review(i, "warmup")).at("/request/object");
      shapes.add(
          pod.at("/spec/containers").size() * 10
              + (pod.toString().contains("JAVA_TOOL_OPTIONS") ? 1 : 0));
    }
    assertThat(shapes).hasSizeGreaterThanOrEqualTo(4);
  }
}
