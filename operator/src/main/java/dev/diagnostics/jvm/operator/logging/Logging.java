package dev.diagnostics.jvm.operator.logging;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;

/**
 * Applies --log-format and --log-level to every logger of the process. The backend is Log4j 2
 * (through SLF4J, which java-operator-sdk, fabric8 and Jetty log to), configured by
 * src/main/resources/log4j2.xml from three system properties.
 */
public final class Logging {
  static final String FORMAT = "jvmdiag.log.format";
  static final String LEVEL = "jvmdiag.log.level";
  static final String OTHERS = "jvmdiag.log.others";

  private Logging() {}

  public static void configure(LogFormat format, LogLevel level) {
    boolean started = LogManager.getFactory().hasContext(Logging.class.getName(), null, false);
    System.setProperty(FORMAT, format.name());
    System.setProperty(LEVEL, level.level.name());
    System.setProperty(OTHERS, level.others().name());
    // the first logger reads the properties; a second reading costs as much as the first
    if (started) context().reconfigure();
  }

  static LoggerContext context() {
    return (LoggerContext) LogManager.getContext(false);
  }
}
