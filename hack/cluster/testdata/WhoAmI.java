import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

// What an in-cluster client does: dial the `kubernetes` Service from the pod's environment,
// trust the mounted CA, present the ServiceAccount token. Prints the HTTP status and the
// SelfSubjectReview, which names the user the API server authenticated.
public class WhoAmI {
  public static void main(String[] args) throws Exception {
    Path sa = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
    String token = Files.readString(sa.resolve("token")).trim();
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    try (var in = Files.newInputStream(sa.resolve("ca.crt"))) {
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        trust.setCertificateEntry("ca" + i++, c);
      }
    }
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(null, tmf.getTrustManagers(), null);
    String url = "https://" + System.getenv("KUBERNETES_SERVICE_HOST") + ":" + System.getenv("KUBERNETES_SERVICE_PORT")
        + "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    HttpRequest req = HttpRequest.newBuilder(URI.create(url))
        .header("Authorization", "Bearer " + token)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}"))
        .build();
    HttpResponse<String> resp = HttpClient.newBuilder().sslContext(tls).build().send(req, HttpResponse.BodyHandlers.ofString());
    System.out.println(resp.statusCode() + " " + resp.body());
  }
}
