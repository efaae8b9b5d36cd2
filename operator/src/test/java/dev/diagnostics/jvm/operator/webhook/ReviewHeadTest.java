package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** What a refusal echoes, read without decoding the review. */
class ReviewHeadTest {
  static ReviewHead head(String body) {
    return ReviewHead.of(body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void readsTheVersionAndTheRequestsUidWhereverTheyAre() {
    assertThat(
            head(
                ResourceValidatorTest.review(
                    "CREATE", ResourceValidatorTest.resource("a", "checkout", ""), "null")))
        .isEqualTo(new ReviewHead("admission.k8s.io/v1", "u-1"));
    assertThat(
            head(
                """
                {"request":{"kind":{"uid":"not-this"},"object":{"metadata":{"uid":"nor-this"}},
                 "uid":"u-2"},"apiVersion":"admission.k8s.io/v1beta1"}\
                """))
        .isEqualTo(new ReviewHead("admission.k8s.io/v1beta1", "u-2"));
  }

  @Test
  void anythingElseGivesTheDefaults() {
    for (String body : new String[] {"", "[]", "not json", "{\"request\":", "{\"request\":{}}"})
      assertThat(head(body)).isEqualTo(new ReviewHead("admission.k8s.io/v1", ""));
  }
}
