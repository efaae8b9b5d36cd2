package dev.diagnostics.jvm.operator.certs;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.dsl.Informable;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the certificate check (the Secret, the registrations' caBundle, the served certificate) on
 * one thread: within {@link #debounce} of a change to a watched object (a burst of changes runs it
 * once), every interval as a backstop should a watch miss something, at the times the check asks
 * for (the end of a grace period), and again after a failure (5 s, doubling up to a minute). A
 * renewal, a deleted Secret or a rewritten registration takes effect within seconds, without a
 * restart.
 */
public final class CertificateRotation implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CertificateRotation.class);
  public static final Duration DEFAULT_DEBOUNCE = Duration.ofMillis(500);
  static final Duration FIRST_RETRY = Duration.ofSeconds(5);
  static final Duration LAST_RETRY = Duration.ofMinutes(1);
  static final Duration WATCH_RETRY = Duration.ofSeconds(30);

  /** The check; returns when it wants to run again on its own (null: at the next interval). */
  @FunctionalInterface
  public interface Check {
    Instant run();
  }

  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("cert-rotation").daemon(true).factory());
  private final Check check;
  private final Duration every;
  private final Duration debounce;
  private final AtomicBoolean pending = new AtomicBoolean();
  private final List<SharedIndexInformer<?>> informers = new CopyOnWriteArrayList<>();
  private Duration retry = FIRST_RETRY;
  private Instant scheduledAgain;

  public CertificateRotation(Duration every, Duration debounce, Check check) {
    this.check = check;
    this.every = every;
    this.debounce = debounce;
    long seconds = every.toSeconds();
    timer.scheduleWithFixedDelay(this::trigger, seconds, seconds, TimeUnit.SECONDS);
  }

  /**
   * Watches one object (by name: a metadata.name field selector, which RBAC resourceNames allow);
   * any add, change or delete runs the check. A watch that cannot start (RBAC, the API server
   * unreachable) is logged and tried again every {@link #WATCH_RETRY}; meanwhile the periodic check
   * still runs.
   */
  public <T extends HasMetadata> CertificateRotation watch(String what, Informable<T> source) {
    startWatch(what, source, true);
    return this;
  }

  private <T extends HasMetadata> void startWatch(
      String what, Informable<T> source, boolean first) {
    if (timer.isShutdown()) return;
    SharedIndexInformer<T> informer = source.runnableInformer(0);
    informer.addEventHandler(
        new ResourceEventHandler<T>() {
          @Override
          public void onAdd(T o) {
            trigger();
          }

          @Override
          public void onUpdate(T old, T o) {
            if (!old.getMetadata()
                .getResourceVersion()
                .equals(o.getMetadata().getResourceVersion())) trigger();
          }

          @Override
          public void onDelete(T o, boolean finalStateUnknown) {
            trigger();
          }
        });
    informers.add(informer);
    informer
        .start()
        .whenComplete((ok, e) -> {
          if (e == null) {
            if (!first) LOG.info("watching {} again", what);
            return;
          }
          if (first)
            LOG.warn(
                "cannot watch {} ({}): changes to it take effect at the next check, within {};"
                    + " trying again every {}s",
                what,
                e.getMessage(),
                every,
                WATCH_RETRY.toSeconds());
          informers.remove(informer);
          informer.close();
          later(() -> startWatch(what, source, false), WATCH_RETRY.toMillis());
        });
  }

  /** Runs the check within the debounce delay (once for any number of calls meanwhile). */
  public void trigger() {
    if (pending.compareAndSet(false, true)) later(this::run, debounce.toMillis());
  }

  /** Runs the check now, on the caller's thread (at start), as a triggered one would run. */
  public void runNow() {
    run();
  }

  private synchronized void run() {
    pending.set(false);
    Instant again;
    try {
      again = check.run();
      retry = FIRST_RETRY;
    } catch (RuntimeException e) {
      LOG.warn("certificate check failed, retrying in {}s: {}", retry.toSeconds(), e.getMessage());
      later(this::trigger, retry.toMillis());
      retry = retry.multipliedBy(2).compareTo(LAST_RETRY) > 0 ? LAST_RETRY : retry.multipliedBy(2);
      return;
    }
    if (again != null && !again.equals(scheduledAgain)) {
      scheduledAgain = again;
      long in = Math.max(0, Duration.between(Instant.now(), again).toMillis()) + 1000;
      if (in < every.toMillis()) later(this::trigger, in);
    }
  }

  private void later(Runnable r, long millis) {
    try {
      timer.schedule(r, millis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closed) {
      // closed meanwhile: nothing more to check
    }
  }

  @Override
  public void close() {
    for (SharedIndexInformer<?> i : informers) i.close();
    timer.shutdownNow();
  }
}
