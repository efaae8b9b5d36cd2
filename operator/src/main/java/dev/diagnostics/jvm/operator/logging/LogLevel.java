package dev.diagnostics.jvm.operator.logging;

import org.apache.logging.log4j.Level;

/**
 * The least severe events logged (--log-level), as the agent names its levels. The operator's own
 * loggers log from this level; other libraries' (java-operator-sdk, fabric8, Jetty) from warn, or
 * from this level when it is debug or trace.
 */
public enum LogLevel {
  error(Level.ERROR),
  warn(Level.WARN),
  info(Level.INFO),
  debug(Level.DEBUG),
  trace(Level.TRACE);

  final Level level;

  LogLevel(Level level) {
    this.level = level;
  }

  /** The level of every other library's loggers. */
  Level others() {
    return level.isMoreSpecificThan(Level.WARN) || level.isLessSpecificThan(Level.DEBUG)
        ? level
        : Level.WARN;
  }
}
