package dev.diagnostics.jvm.operator;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The leader-election flags as a user types them: on by default, both spellings of off. */
class LeaderElectionFlagsTest {
  static Main parse(String... args) {
    Main m = new Main();
    new CommandLine(m).parseArgs(args);
    return m;
  }

  @Test
  void onByDefaultWithTheDefaultLeaseName() {
    Main m = parse();
    assertThat(m.leaderElection).isTrue();
    assertThat(m.leaderElectionLease).isEqualTo("jvmdiag-operator");
    assertThat(m.leaderElectionNamespace).isNull(); // resolved from the pod at start
  }

  @Test
  void offWithEitherSpelling() {
    assertThat(parse("--leader-election=false").leaderElection).isFalse();
    assertThat(parse("--no-leader-election").leaderElection).isFalse();
    assertThat(parse("--leader-election-namespace", "ops").leaderElectionNamespace)
        .isEqualTo("ops");
  }
}
