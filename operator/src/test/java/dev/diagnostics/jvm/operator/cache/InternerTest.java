package dev.diagnostics.jvm.operator.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class InternerTest {
  @Test
  void equalValuesShareTheFirstInstance() {
    Interner<List<String>> interner = new Interner<>();
    List<String> first = List.of("a", "b");
    List<String> kept = interner.intern(first);
    assertThat(kept).isSameAs(first);
    assertThat(interner.intern(List.of("a", "b"))).isSameAs(first);
    assertThat(interner.intern(List.of("c"))).isNotSameAs(kept).isEqualTo(List.of("c"));
    assertThat(interner.intern(null)).isNull();
  }

  @Test
  void aValueNoOneHoldsIsLetGo() throws InterruptedException {
    Interner<String> interner = new Interner<>();
    // new String: not a constant the class holds
    interner.intern(new String("no one holds this"));
    for (int i = 0; i < 50 && interner.size() > 0; i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertThat(interner.size()).isZero();
  }
}
