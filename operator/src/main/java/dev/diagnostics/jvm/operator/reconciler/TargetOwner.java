package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import java.util.List;

/**
 * Of the resources that target the same workload, the one that may write its template: the oldest
 * (then by name); resources being deleted do not count. The admission refuses a second resource per
 * workload, but two created at the same instant can both get in: only the owner writes, or the two
 * would flip the template's hash forever.
 */
final class TargetOwner {
  private TargetOwner() {}

  static JvmDiagnostics of(JvmDiagnostics r, List<JvmDiagnostics> sameTarget) {
    JvmDiagnostics best = r;
    for (JvmDiagnostics o : sameTarget) {
      if (o.getMetadata().getDeletionTimestamp() != null
          || o.getMetadata().getName().equals(r.getMetadata().getName())) continue;
      if (olderThan(o, best)) best = o;
    }
    return best;
  }

  private static boolean olderThan(JvmDiagnostics a, JvmDiagnostics b) {
    String ta = a.getMetadata().getCreationTimestamp();
    String tb = b.getMetadata().getCreationTimestamp();
    // RFC 3339 in UTC with second precision: compares as text
    int c = ta == null || tb == null ? 0 : ta.compareTo(tb);
    return c < 0 || (c == 0 && a.getMetadata().getName().compareTo(b.getMetadata().getName()) < 0);
  }
}
