package dev.diagnostics.jvm.operator.webhook;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * The webhook's settings.
 *
 * @param agentImage the node agent image the webhook adds as the sidecar (collection: Sidecar)
 * @param namespace the operator's namespace: holds the certificate Secret, excluded from injection
 * @param bind where the HTTPS server listens (port 0: any free one)
 * @param target what the registrations call: service:NAME.NS:443 or a base URL (":0" at the end:
 *     the bound port)
 * @param hosts the names the serving certificate is issued for
 * @param secret the Secret holding the CA and the serving certificate
 * @param configName name of the Mutating- and ValidatingWebhookConfiguration
 * @param manageConfig apply those registrations with our CA and issue the certificate (false:
 *     cert-manager does)
 * @param certCheckInterval how often the certificate is checked for renewal
 * @param warmup synthetic admissions before listening (0: none)
 * @param allowedJvmOptions the cluster administrator's exceptions to the diagnostic-options
 *     allowlist
 * @param peerLimits how many requests one peer address may send each endpoint
 */
public record WebhookSettings(
    String agentImage,
    String namespace,
    InetSocketAddress bind,
    String target,
    List<String> hosts,
    String secret,
    String configName,
    boolean manageConfig,
    Duration certCheckInterval,
    int warmup,
    List<String> allowedJvmOptions,
    WebhookServer.PeerLimits peerLimits) {
  public WebhookSettings {
    hosts = List.copyOf(hosts);
    allowedJvmOptions = allowedJvmOptions == null ? List.of() : List.copyOf(allowedJvmOptions);
    if (peerLimits == null) peerLimits = WebhookServer.PeerLimits.DEFAULT;
  }

  /** With the default peer limits. */
  public WebhookSettings(
      String agentImage,
      String namespace,
      InetSocketAddress bind,
      String target,
      List<String> hosts,
      String secret,
      String configName,
      boolean manageConfig,
      Duration certCheckInterval,
      int warmup,
      List<String> allowedJvmOptions) {
    this(
        agentImage,
        namespace,
        bind,
        target,
        hosts,
        secret,
        configName,
        manageConfig,
        certCheckInterval,
        warmup,
        allowedJvmOptions,
        WebhookServer.PeerLimits.DEFAULT);
  }
}
