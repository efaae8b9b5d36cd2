import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Build time (generate-sources, run as a single-file program): turns
 * monitoring/histogram-bounds.txt, the one definition of the jvmdiag_*_seconds bucket bounds, into
 * the Java constants the operator validates spec.alerts thresholds with and renders alert rules
 * from. Constants, so the CRD's validation annotations can use them.
 *
 * <p>Usage: java GenerateHistogramBounds.java BOUNDS_FILE OUTPUT_SOURCE_DIR
 */
public final class GenerateHistogramBounds {
  static final String PACKAGE = "dev.diagnostics.jvm.operator.api";
  static final String CLASS = "HistogramBounds";

  record Bound(String le, String duration) {}

  public static void main(String[] args) throws IOException {
    if (args.length != 2)
      throw new IllegalArgumentException(
          "usage: GenerateHistogramBounds BOUNDS_FILE OUTPUT_SOURCE_DIR");
    Path in = Path.of(args[0]);
    List<Bound> bounds = parse(in);
    Path out = Path.of(args[1], PACKAGE.replace('.', '/'), CLASS + ".java");
    Files.createDirectories(out.getParent());
    String source = render(bounds, in.getFileName().toString());
    if (!Files.exists(out) || !Files.readString(out).equals(source)) Files.writeString(out, source);
  }

  /** Comment and blank lines skipped; every other line is "le specDuration", increasing. */
  static List<Bound> parse(Path file) throws IOException {
    List<Bound> bounds = new ArrayList<>();
    int n = 0;
    double last = 0;
    for (String line : Files.readAllLines(file)) {
      n++;
      String t = line.strip();
      if (t.isEmpty() || t.startsWith("#")) continue;
      String[] f = t.split("\\s+");
      if (f.length != 2)
        throw new IllegalArgumentException(
            file + ":" + n + ": expected \"le  specDuration\", got \"" + line + "\"");
      double le = Double.parseDouble(f[0]);
      if (le <= last)
        throw new IllegalArgumentException(
            file + ":" + n + ": bounds must increase, " + f[0] + " does not");
      if (!f[1].matches("[0-9.]+(us|ms|s)"))
        throw new IllegalArgumentException(
            file + ":" + n + ": \"" + f[1] + "\" is not a duration in us, ms or s");
      last = le;
      bounds.add(new Bound(f[0], f[1]));
    }
    if (bounds.isEmpty()) throw new IllegalArgumentException(file + ": no bounds");
    return bounds;
  }

  static String render(List<Bound> bounds, String from) {
    String pairs =
        bounds.stream()
            .map(b -> "{\"" + b.duration() + "\", \"" + b.le() + "\"}")
            .collect(Collectors.joining(",\n      "));
    String durations = bounds.stream().map(Bound::duration).collect(Collectors.joining(" "));
    String cel =
        bounds.stream()
            .map(b -> "'" + b.duration() + "'")
            .collect(Collectors.joining(", ", "self in [", "]"));
    return """
    package %s;

    /** Generated at build time from monitoring/%s (the one definition of the histogram bounds); do not edit. */
    public final class %s {
      private %s() {}

      /** Each bound as {spec duration, `le` label exactly as exposed}, increasing. */
      public static final String[][] BOUNDS = {
          %s
      };

      /** The spec durations, space-separated: the values a duration threshold may take. */
      public static final String DURATIONS = "%s";

      /** The CEL rule that admits exactly those durations. */
      public static final String CEL_ONE_OF = "%s";
    }
    """
        .formatted(PACKAGE, from, CLASS, CLASS, pairs, durations, cel);
  }
}
