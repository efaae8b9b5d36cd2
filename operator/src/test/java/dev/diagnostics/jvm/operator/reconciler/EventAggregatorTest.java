package dev.diagnostics.jvm.operator.reconciler;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Events about the same thing count up one event; memory stays bounded. */
class EventAggregatorTest {
  @Test
  void aRepeatWithinTheWindowCountsUpTheSameEvent() {
    EventAggregator a = new EventAggregator();
    String k = EventAggregator.key("uid-1", false, "InjectedFalse", "2 of 4 pod(s) lack ...");
    assertThat(a.repeats(k, 0)).isNull();
    a.sent(k, "checkout.abc", 1, 0);
    assertThat(a.repeats(k, 1_000)).isEqualTo(new EventAggregator.Sent("checkout.abc", 1, 0));
    a.sent(k, "checkout.abc", 2, 1_000);
    assertThat(a.repeats(k, 2_000).count()).isEqualTo(2);
  }

  @Test
  void anotherMessageReasonOrResourceIsAnotherEvent() {
    EventAggregator a = new EventAggregator();
    a.sent(EventAggregator.key("uid-1", true, "Ready", "m"), "x.1", 1, 0);
    assertThat(a.repeats(EventAggregator.key("uid-1", true, "Ready", "other"), 1)).isNull();
    assertThat(a.repeats(EventAggregator.key("uid-1", false, "Ready", "m"), 1)).isNull();
    assertThat(a.repeats(EventAggregator.key("uid-2", true, "Ready", "m"), 1)).isNull();
  }

  @Test
  void afterTheWindowANewEventIsCreated() {
    EventAggregator a = new EventAggregator();
    String k = EventAggregator.key("uid-1", true, "Ready", "m");
    a.sent(k, "x.1", 5, 0);
    assertThat(a.repeats(k, EventAggregator.WINDOW_NANOS + 1)).isNull();
  }

  @Test
  void remembersAtMostMaxEvents() {
    EventAggregator a = new EventAggregator(3);
    for (int i = 0; i < 10; i++) a.sent("k" + i, "e" + i, 1, 0);
    assertThat(a.size()).isEqualTo(3);
    assertThat(a.repeats("k0", 1)).isNull();
    assertThat(a.repeats("k9", 1)).isNotNull();
  }
}
