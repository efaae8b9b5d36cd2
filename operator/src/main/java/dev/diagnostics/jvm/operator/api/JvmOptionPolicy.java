package dev.diagnostics.jvm.operator.api;

import java.util.List;
import java.util.regex.Pattern;

/**
 * Which JVM options a JvmDiagnostics may put into JAVA_TOOL_OPTIONS: diagnostic and logging options
 * only. A resource asks for diagnostics and nothing more, so anything that loads code, opens a
 * port, runs a command or changes where classes come from is refused.
 *
 * <p>The patterns are written once here and used three times: in the CRD's CEL rules (the constants
 * are spliced into {@link JvmOptions}' annotations, so the API server refuses them with no operator
 * running), by the operator's validating webhook (which also knows the cluster administrator's
 * exceptions) and by the pod mutation (a resource that got in anyway, e.g. while the validating
 * webhook was not registered, never has a refused option injected). They are written in the common
 * subset of RE2 (CEL) and java.util.regex: anchored, no backslashes.
 *
 * <p>Exceptions: Java agents ({@code -javaagent:}, {@code -agentpath:}, {@code -agentlib:}) and
 * system properties ({@code -D}) pass the CRD's rules and are refused by the webhook unless the
 * cluster administrator allowed them by prefix (operator flag {@code --allow-jvm-option}, chart
 * value {@code operator.allowedJvmOptions}). The refused classes below cannot be allowed by anyone
 * through a JvmDiagnostics: whoever needs them sets them in the workload's own manifest.
 */
public final class JvmOptionPolicy {
  private JvmOptionPolicy() {}

  /** Runs a shell command when the JVM fails. */
  public static final String RUNS_COMMAND = "^-XX:(OnOutOfMemoryError|OnError)=";

  public static final String RUNS_COMMAND_WHY =
      "runs a shell command in the container when the JVM fails; a JvmDiagnostics may only add diagnostic options: remove the entry";

  /** Opens a debugger or management port (and, for jdwp, loads the debugger agent). */
  public static final String OPENS_PORT =
      "^(-Xrunjdwp|-agentlib:jdwp|-Dcom[.]sun[.]management[.]|-XX:[+]ManagementServer|-Djava[.]rmi[.])";

  public static final String OPENS_PORT_WHY =
      "opens a debugger or JMX/RMI port that gives whoever reaches it control of the JVM; a JvmDiagnostics may only add diagnostic options: remove the entry";

  /** Changes where classes or native code come from, or which code is trusted. */
  public static final String CHANGES_CLASS_LOADING =
      "^(-Xbootclasspath|-Xrun|-cp$|-classpath$|--class-path|--module-path|--upgrade-module-path|--patch-module|--add-modules"
          + "|-Djava[.](class[.]path|ext[.]dirs|endorsed[.]dirs|library[.]path|system[.]class[.]loader|security[.]manager|security[.]policy|home)"
          + "|-Djdk[.]module[.]|-Dsun[.]boot[.])";

  public static final String CHANGES_CLASS_LOADING_WHY =
      "changes where the JVM loads classes or native libraries from, or which code it trusts; a JvmDiagnostics may only add diagnostic options: remove the entry";

  /** Opens the JDK's internals to the application's own code. */
  public static final String OPENS_INTERNALS =
      "^--(add-opens|add-exports|add-reads|illegal-access|enable-native-access)";

  public static final String OPENS_INTERNALS_WHY =
      "opens the internals of the JDK to the code of the application (module encapsulation) and is no diagnostic: set it in the manifest of the workload, not here";

  /**
   * Reads more options from elsewhere, or hides unknown ones: what runs would differ from what the
   * resource shows.
   */
  public static final String INDIRECT_OPTIONS =
      "^(@|-XX:Flags=|-XX:VMOptionsFile=|-XX:[+-]IgnoreUnrecognizedVMOptions)";

  public static final String INDIRECT_OPTIONS_WHY =
      "reads further options from a file or hides unknown ones, so what the JVM runs is no longer what the resource shows: write each option as its own entry";

  /** Turns off what the collectors read, or can keep the JVM from starting. */
  public static final String BLINDS =
      "^(-XX:-UsePerfData|-XX:[+]PerfDisableSharedMem|-XX:[+]DisableAttachMechanism|-Xlog:disable|-Xshare:on)$";

  public static final String BLINDS_WHY =
      "blinds the collectors (no hsperfdata, no attach, no logs) or can stop the JVM from starting: remove the entry";

  /**
   * The diagnostic and logging options: unified logging, GC/class/JNI verbosity, the probes' flags,
   * code-cache and JIT-compiler sizing, diagnostic flags that only print or record (heap dump,
   * error file, JFR, NMT) and the virtual-thread pinning trace.
   */
  public static final String DIAGNOSTIC =
      "^("
          + "-Xlog:[^[:space:]]+"
          + "|-verbose:(gc|class|module|jni)"
          + "|-XX:[+-](PreserveFramePointer|DTraceMethodProbes|DTraceAllocProbes|DTraceMonitorProbes|ExtendedDTraceProbes"
          + "|UnlockDiagnosticVMOptions|DebugNonSafepoints|SegmentedCodeCache|UseCodeCacheFlushing|TieredCompilation"
          + "|CICompilerCountPerCPU|OmitStackTraceInFastThrow|ShowCodeDetailsInExceptionMessages|PrintCompilation"
          + "|PrintCodeCache|PrintCodeCacheOnCompilation|PrintGC|PrintGCDetails|PrintFlagsFinal|PrintCommandLineFlags"
          + "|PrintVMOptions|PrintConcurrentLocks|PrintClassHistogram|PrintNMTStatistics|LogCompilation|LogVMOutput"
          + "|PrintInlining|PrintTieredEvents|PrintStringTableStatistics|HeapDumpOnOutOfMemoryError|SafepointTimeout)"
          + "|-XX:(ReservedCodeCacheSize|InitialCodeCacheSize|NonNMethodCodeHeapSize|ProfiledCodeHeapSize"
          + "|NonProfiledCodeHeapSize|CodeCacheExpansionSize|CodeCacheMinimumUseSpace|CICompilerCount|TieredStopAtLevel"
          + "|PerMethodRecompilationCutoff|PerBytecodeRecompilationCutoff|PerMethodTrapLimit|SafepointTimeoutDelay)=[0-9]+[kKmMgG]?"
          + "|-XX:NativeMemoryTracking=(off|summary|detail)"
          + "|-XX:(LogFile|HeapDumpPath|ErrorFile)=[^[:space:]]+"
          + "|-XX:(StartFlightRecording|FlightRecorderOptions)([=:][^[:space:]]+)?"
          + "|-Djdk[.]tracePinnedThreads(=(full|short))?"
          + ")$";

  /**
   * Options that only the cluster administrator can allow (by prefix); the CRD lets their shape
   * through.
   */
  public static final String ADMIN_ONLY = "^(-javaagent:|-agentpath:|-agentlib:|-D[A-Za-z0-9_])";

  /** What an allowed option looks like, in a refusal message. */
  public static final String DIAGNOSTIC_HINT =
      "is not a diagnostic option: allowed are -Xlog:..., -verbose:gc, -XX:+PreserveFramePointer, -XX:+DTrace...Probes, "
          + "code-cache and compiler sizing (-XX:ReservedCodeCacheSize=256m, -XX:CICompilerCount=4, ...), "
          + "-XX:+UnlockDiagnosticVMOptions with flags that only print or record (-XX:+DebugNonSafepoints, -XX:+PrintCompilation, "
          + "-XX:StartFlightRecording=..., -XX:NativeMemoryTracking=summary, -XX:+HeapDumpOnOutOfMemoryError, ...): see docs/operator.md";

  public static final String ADMIN_ONLY_WHY =
      "loads code into every JVM of the workload (a Java agent) or sets a system property the application reads: only the cluster "
          + "administrator can allow it (operator flag --allow-jvm-option, chart value operator.allowedJvmOptions); remove the entry or ask them";

  /** A refused class: its pattern and why. */
  public record Refusal(String pattern, String why) {
    Pattern compiled() {
      return Pattern.compile(pattern);
    }
  }

  /** In the order they are checked: the most specific reason first. */
  public static final List<Refusal> REFUSED =
      List.of(
          new Refusal(RUNS_COMMAND, RUNS_COMMAND_WHY),
          new Refusal(OPENS_PORT, OPENS_PORT_WHY),
          new Refusal(CHANGES_CLASS_LOADING, CHANGES_CLASS_LOADING_WHY),
          new Refusal(OPENS_INTERNALS, OPENS_INTERNALS_WHY),
          new Refusal(INDIRECT_OPTIONS, INDIRECT_OPTIONS_WHY),
          new Refusal(BLINDS, BLINDS_WHY));

  private static final List<Pattern> REFUSED_PATTERNS =
      REFUSED.stream().map(Refusal::compiled).toList();
  // Java has no [[:space:]]: \p{Space} is the same class (POSIX space)
  private static final Pattern DIAGNOSTIC_PATTERN =
      Pattern.compile(DIAGNOSTIC.replace("[:space:]", "\\p{Space}"));
  private static final Pattern ADMIN_ONLY_PATTERN = Pattern.compile(ADMIN_ONLY);
  private static final Pattern WHITESPACE = Pattern.compile("\\s");

  /**
   * Why the option may not be injected, or null when it may. adminAllowed: option prefixes the
   * cluster administrator allowed (only options of the {@link #ADMIN_ONLY} shapes can be).
   */
  public static String refusal(String option, List<String> adminAllowed) {
    if (option == null || option.isEmpty()) return "is empty: remove the entry";
    if (WHITESPACE.matcher(option).find())
      return "must be ONE JVM option without whitespace: write \"-Xmx1g -Xms1g\" as two entries";
    for (int i = 0; i < REFUSED_PATTERNS.size(); i++) {
      if (REFUSED_PATTERNS.get(i).matcher(option).find()) return REFUSED.get(i).why();
    }
    if (DIAGNOSTIC_PATTERN.matcher(option).find()) return null;
    if (ADMIN_ONLY_PATTERN.matcher(option).find()) {
      return adminAllowed.stream().anyMatch(option::startsWith) ? null : ADMIN_ONLY_WHY;
    }
    return DIAGNOSTIC_HINT;
  }

  /**
   * Null when the cluster administrator may allow options starting with this prefix, else why not.
   */
  public static String adminPrefixProblem(String prefix) {
    if (prefix == null || prefix.isBlank()) return "an empty prefix would allow every option";
    if (!ADMIN_ONLY_PATTERN.matcher(prefix).find()) {
      return "only Java agents (-javaagent:, -agentpath:, -agentlib:) and system properties (-D<name>) can be allowed;"
          + " diagnostic options need no exception, and the refused classes cannot be allowed through a JvmDiagnostics";
    }
    for (int i = 0; i < REFUSED_PATTERNS.size(); i++) {
      if (REFUSED_PATTERNS.get(i).matcher(prefix).find()) return "it " + REFUSED.get(i).why();
    }
    return null;
  }
}
