package dev.diagnostics.jvm.operator.logging;

/**
 * How the operator's log lines look on stderr (--log-format). One setting for the process, read at
 * every line, so loggers made before the command line was parsed follow it too.
 */
public enum LogFormat {
  /** {@code [thread] LEVEL logger - message}, as slf4j-simple wrote it before. */
  text,
  /** One JSON object per line: time, level, logger, thread, message, exception. */
  json;

  private static volatile LogFormat current = text;

  public static LogFormat current() {
    return current;
  }

  public static void use(LogFormat format) {
    current = format;
  }
}
