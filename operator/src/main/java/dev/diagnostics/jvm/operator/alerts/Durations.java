package dev.diagnostics.jvm.operator.alerts;

import dev.diagnostics.jvm.operator.api.HistogramBounds;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The histogram bounds (monitoring/histogram-bounds.txt, generated into {@link HistogramBounds}) as
 * spec duration → exact `le` label string.
 */
public final class Durations {
  private Durations() {}

  public static final Map<String, String> LE;

  static {
    Map<String, String> le = new LinkedHashMap<>();
    for (String[] b : HistogramBounds.BOUNDS) le.put(b[0], b[1]);
    LE = Collections.unmodifiableMap(le);
  }

  /** The `le` string for a threshold, or an error naming the allowed values. */
  public static String le(String field, String duration) {
    String le = LE.get(duration);
    if (le == null) {
      throw new IllegalArgumentException(
          field
              + ".threshold \""
              + duration
              + "\" is not a histogram bound; use one of "
              + HistogramBounds.DURATIONS);
    }
    return le;
  }
}
