package dev.diagnostics.jvm.operator.logging;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.Logger;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The operator's SLF4J binding (META-INF/services): every logger of the process (ours, fabric8's,
 * java-operator-sdk's) writes INFO and above to stderr as text or JSON ({@link LogFormat}). Written
 * here rather than taken from a logging library: two formats and one level need no configuration
 * files, and the text lines stay the ones slf4j-simple wrote.
 */
public final class LogProvider implements SLF4JServiceProvider {
  private final Map<String, Logger> loggers = new ConcurrentHashMap<>();
  private final ILoggerFactory factory =
      name -> loggers.computeIfAbsent(name, n -> new StderrLogger(n, null));
  private final IMarkerFactory markers = new BasicMarkerFactory();
  private final MDCAdapter mdc = new BasicMDCAdapter();

  @Override
  public ILoggerFactory getLoggerFactory() {
    return factory;
  }

  @Override
  public IMarkerFactory getMarkerFactory() {
    return markers;
  }

  @Override
  public MDCAdapter getMDCAdapter() {
    return mdc;
  }

  @Override
  public String getRequestedApiVersion() {
    return "2.0.99";
  }

  @Override
  public void initialize() {}
}
