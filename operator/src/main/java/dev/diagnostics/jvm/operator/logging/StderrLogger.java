package dev.diagnostics.jvm.operator.logging;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/** One logger: INFO and above, one line per event on stderr, in {@link LogFormat#current()}. */
final class StderrLogger extends LegacyAbstractLogger {
  private static final long serialVersionUID = 1L;

  /** Lines of concurrent threads must not interleave. */
  private static final Object LOCK = new Object();

  /** null: System.err at each line (so a test's redirect is followed). */
  private final transient PrintStream out;

  StderrLogger(String name, PrintStream out) {
    this.name = name;
    this.out = out;
  }

  @Override
  public boolean isTraceEnabled() {
    return false;
  }

  @Override
  public boolean isDebugEnabled() {
    return false;
  }

  @Override
  public boolean isInfoEnabled() {
    return true;
  }

  @Override
  public boolean isWarnEnabled() {
    return true;
  }

  @Override
  public boolean isErrorEnabled() {
    return true;
  }

  @Override
  protected String getFullyQualifiedCallerName() {
    return null;
  }

  @Override
  protected void handleNormalizedLoggingCall(
      Level level, Marker marker, String pattern, Object[] args, Throwable t) {
    String line =
        format(
            LogFormat.current(),
            Instant.now(),
            level,
            name,
            Thread.currentThread().getName(),
            MessageFormatter.basicArrayFormat(pattern, args),
            t);
    PrintStream to = out != null ? out : System.err;
    synchronized (LOCK) {
      to.print(line);
      to.flush();
    }
  }

  /** The whole text of one event, ending in a newline. */
  static String format(
      LogFormat format,
      Instant time,
      Level level,
      String logger,
      String thread,
      String message,
      Throwable t) {
    if (format == LogFormat.json) {
      StringBuilder b = new StringBuilder(128).append('{');
      field(b, "time", time.toString()).append(',');
      field(b, "level", level.toString()).append(',');
      field(b, "logger", logger).append(',');
      field(b, "thread", thread).append(',');
      field(b, "message", message);
      if (t != null) field(b.append(','), "exception", stackTrace(t));
      return b.append("}\n").toString();
    }
    String line = "[" + thread + "] " + level + " " + logger + " - " + message + "\n";
    return t == null ? line : line + stackTrace(t);
  }

  private static String stackTrace(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }

  private static StringBuilder field(StringBuilder b, String key, String value) {
    b.append('"').append(key).append("\":");
    if (value == null) return b.append("null");
    b.append('"');
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        }
      }
    }
    return b.append('"');
  }
}
