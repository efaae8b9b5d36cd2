package dev.diagnostics.jvm.operator.certs;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks the webhook certificate every interval and hands the current material on (the server
 * reloads it, the registration gets its CA): a renewal, or a Secret another replica or cert-manager
 * rewrote, takes effect without a restart.
 */
public final class CertificateRotation implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CertificateRotation.class);
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("cert-rotation").daemon(true).factory());

  public CertificateRotation(
      WebhookCertificates certs, Duration every, Consumer<WebhookCertificates.Material> use) {
    long seconds = every.toSeconds();
    timer.scheduleWithFixedDelay(
        () -> {
          try {
            use.accept(certs.ensure());
          } catch (RuntimeException e) {
            LOG.warn("certificate check failed, retrying in {}s: {}", seconds, e.getMessage());
          }
        },
        seconds,
        seconds,
        TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
