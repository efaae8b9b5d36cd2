package dev.diagnostics.jvm.operator.alerts;

import java.util.LinkedHashMap;
import java.util.Map;

/** The pause histogram bounds of docs/metrics.md: spec duration → exact `le` label string. */
public final class Durations {
  private Durations() {}

  public static final Map<String, String> LE = new LinkedHashMap<>();

  static {
    String[][] pairs = {
      {"1ms", "0.001"}, {"2.5ms", "0.0025"}, {"5ms", "0.005"}, {"10ms", "0.01"}, {"25ms", "0.025"},
      {"50ms", "0.05"}, {"100ms", "0.1"}, {"250ms", "0.25"}, {"500ms", "0.5"}, {"1s", "1.0"},
      {"2.5s", "2.5"}, {"5s", "5.0"}, {"10s", "10.0"}, {"30s", "30.0"}, {"60s", "60.0"},
    };
    for (String[] p : pairs) LE.put(p[0], p[1]);
  }

  /** The `le` string for a threshold, or an error naming the allowed values. */
  public static String le(String field, String duration) {
    String le = LE.get(duration);
    if (le == null) {
      throw new IllegalArgumentException(field + ".threshold \"" + duration + "\" is not a histogram bound; use one of "
          + String.join(" ", LE.keySet()));
    }
    return le;
  }
}
