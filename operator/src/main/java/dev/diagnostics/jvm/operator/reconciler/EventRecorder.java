package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kubernetes events on the JvmDiagnostics, one per reconcile that changed conditions (naming each
 * transition); never fails a reconcile. Sent after the reconcile, on their own threads: a burst of
 * new resources writes one event each, and the status should not queue behind them. A repeat of the
 * last 10 minutes (same resource, type, reason and message: a condition that flaps) counts up the
 * event it repeats instead of adding one ({@link EventAggregator}).
 */
public final class EventRecorder {
  private static final Logger LOG = LoggerFactory.getLogger(EventRecorder.class);
  private static final int QUEUE = 10_000;
  private static final ExecutorService SENDER =
      new ThreadPoolExecutor(
          2,
          2,
          0,
          TimeUnit.SECONDS,
          new LinkedBlockingQueue<>(QUEUE),
          Thread.ofPlatform().name("events-", 0).daemon(true).factory(),
          (task, pool) -> LOG.warn("{} events queued: dropping one", QUEUE));
  private static final EventAggregator SENT = new EventAggregator();
  private static volatile boolean patchForbidden;
  private final KubernetesClient client;

  public EventRecorder(KubernetesClient client) {
    this.client = client;
  }

  public void record(JvmDiagnostics r, boolean normal, String reason, String message) {
    String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
    var event =
        new EventBuilder()
            .withNewMetadata()
            .withGenerateName(r.getMetadata().getName() + ".")
            .withNamespace(r.getMetadata().getNamespace())
            .endMetadata()
            .withNewInvolvedObject()
            .withApiVersion(JvmDiagnostics.API_VERSION)
            .withKind("JvmDiagnostics")
            .withName(r.getMetadata().getName())
            .withNamespace(r.getMetadata().getNamespace())
            .withUid(r.getMetadata().getUid())
            .endInvolvedObject()
            .withType(normal ? "Normal" : "Warning")
            .withReason(reason)
            .withMessage(message.length() > 1000 ? message.substring(0, 1000) : message)
            .withFirstTimestamp(now)
            .withLastTimestamp(now)
            .withCount(1)
            .withNewSource()
            .withComponent("jvmdiag-operator")
            .endSource()
            .withReportingComponent("jvmdiag-operator")
            .withReportingInstance(hostname())
            .build();
    String key = EventAggregator.key(r.getMetadata().getUid(), normal, reason, event.getMessage());
    SENDER.execute(() -> {
      try {
        var events = client.v1().events().inNamespace(event.getMetadata().getNamespace());
        long at = System.nanoTime();
        EventAggregator.Sent previous = patchForbidden ? null : SENT.repeats(key, at);
        if (previous != null) {
          try {
            int count = previous.count() + 1;
            events
                .withName(previous.name())
                .patch(
                    PatchContext.of(PatchType.JSON_MERGE),
                    "{\"count\":" + count + ",\"lastTimestamp\":\"" + now + "\"}");
            SENT.sent(key, previous.name(), count, at);
            return;
          } catch (KubernetesClientException e) {
            if (e.getCode() == 403) {
              // RBAC without patch on events: a new event per repeat, as before
              patchForbidden = true;
              LOG.info("may not patch events: each repeated event is a new one");
            } else if (e.getCode() != 404) throw e;
            SENT.forget(key); // expired or deleted: a new one
          }
        }
        var created = events.resource(event).create();
        SENT.sent(key, created.getMetadata().getName(), 1, at);
      } catch (RuntimeException e) { // also a client closed at shutdown
        LOG.warn(
            "cannot record event {} on {}: {}",
            reason,
            event.getInvolvedObject().getName(),
            e.getMessage());
      }
    });
  }

  private static String hostname() {
    String h = System.getenv("HOSTNAME");
    return h == null ? "local" : h;
  }
}
