package dev.diagnostics.jvm.operator.logging;

/**
 * How the operator's log lines look on stderr (--log-format): the node agent's two formats, with
 * its keys (src/main/resources/log4j2.xml builds the chosen one).
 */
public enum LogFormat {
  /** {@code ts=… level=info target=… msg="…" resource.name=…}, the agent's default. */
  logfmt,
  /** One JSON object per line: timestamp, level, message, the MDC's keys, target, error. */
  json
}
