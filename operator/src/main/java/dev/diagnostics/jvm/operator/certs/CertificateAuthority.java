package dev.diagnostics.jvm.operator.certs;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Creates the operator's own CA and the webhook's serving certificate (ECDSA P-256), and PEM I/O.
 */
public final class CertificateAuthority {
  private static final SecureRandom RANDOM = new SecureRandom();

  private CertificateAuthority() {}

  public record Issued(X509Certificate cert, PrivateKey key) {}

  public static Issued newCa(String cn, Duration validity) {
    try {
      KeyPair kp = keyPair();
      X500Name name = new X500Name("CN=" + cn);
      Instant now = Instant.now();
      var b =
          new JcaX509v3CertificateBuilder(
              name,
              serial(),
              Date.from(now.minus(Duration.ofMinutes(5))),
              Date.from(now.plus(validity)),
              name,
              kp.getPublic());
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      b.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      return new Issued(sign(b, kp.getPrivate()), kp.getPrivate());
    } catch (GeneralSecurityException
        | IOException
        | org.bouncycastle.operator.OperatorCreationException e) {
      throw new IllegalStateException("cannot create the webhook CA: " + e.getMessage(), e);
    }
  }

  public static Issued newServing(Issued ca, List<String> hosts, Duration validity) {
    try {
      KeyPair kp = keyPair();
      Instant now = Instant.now();
      var b =
          new JcaX509v3CertificateBuilder(
              ca.cert(),
              serial(),
              Date.from(now.minus(Duration.ofMinutes(5))),
              Date.from(now.plus(validity)),
              new X500Name("CN=" + hosts.get(0)),
              kp.getPublic());
      List<GeneralName> sans = new ArrayList<>();
      for (String h : hosts) {
        sans.add(
            isIp(h)
                ? new GeneralName(GeneralName.iPAddress, h)
                : new GeneralName(GeneralName.dNSName, h));
      }
      b.addExtension(
          Extension.subjectAlternativeName,
          false,
          new GeneralNames(sans.toArray(GeneralName[]::new)));
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      b.addExtension(
          Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
      return new Issued(sign(b, ca.key()), kp.getPrivate());
    } catch (GeneralSecurityException
        | IOException
        | org.bouncycastle.operator.OperatorCreationException e) {
      throw new IllegalStateException(
          "cannot create the webhook serving certificate: " + e.getMessage(), e);
    }
  }

  static boolean isIp(String h) {
    return h.matches("[0-9.]+") || h.contains(":");
  }

  /** The SANs of a certificate, as written (DNS names and IP addresses). */
  public static List<String> sans(X509Certificate cert) {
    List<String> out = new ArrayList<>();
    try {
      if (cert.getSubjectAlternativeNames() == null) return out;
      for (List<?> san : cert.getSubjectAlternativeNames()) {
        String v = String.valueOf(san.get(1));
        if (isIp(v)) v = InetAddress.getByName(v).getHostAddress();
        out.add(v);
      }
    } catch (GeneralSecurityException | IOException e) {
      return out;
    }
    return out;
  }

  private static KeyPair keyPair() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(256, RANDOM);
    return g.generateKeyPair();
  }

  private static BigInteger serial() {
    return new BigInteger(64, RANDOM).abs().add(BigInteger.ONE);
  }

  private static X509Certificate sign(JcaX509v3CertificateBuilder b, PrivateKey key)
      throws GeneralSecurityException, org.bouncycastle.operator.OperatorCreationException {
    X509CertificateHolder h = b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key));
    return new JcaX509CertificateConverter().getCertificate(h);
  }

  public static String pem(Object o) {
    StringWriter w = new StringWriter();
    try (JcaPEMWriter pw = new JcaPEMWriter(w)) {
      // keys as PKCS#8 ("PRIVATE KEY"), which every TLS stack reads
      if (o instanceof PrivateKey k)
        pw.writeObject(new org.bouncycastle.openssl.jcajce.JcaPKCS8Generator(k, null));
      else pw.writeObject(o);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.toString();
  }

  public static X509Certificate readCert(String pem) throws IOException, GeneralSecurityException {
    try (PEMParser p = new PEMParser(new StringReader(pem))) {
      Object o = p.readObject();
      if (!(o instanceof X509CertificateHolder h)) throw new IOException("not a PEM certificate");
      return new JcaX509CertificateConverter().getCertificate(h);
    }
  }

  /** Every certificate of a PEM bundle, in order (none for an empty text). */
  public static List<X509Certificate> readCerts(String pem)
      throws IOException, GeneralSecurityException {
    List<X509Certificate> out = new ArrayList<>();
    try (PEMParser p = new PEMParser(new StringReader(pem))) {
      for (Object o = p.readObject(); o != null; o = p.readObject()) {
        if (!(o instanceof X509CertificateHolder h)) throw new IOException("not a PEM certificate");
        out.add(new JcaX509CertificateConverter().getCertificate(h));
      }
    }
    return out;
  }

  public static PrivateKey readKey(String pem) throws IOException {
    try (PEMParser p = new PEMParser(new StringReader(pem))) {
      Object o = p.readObject();
      JcaPEMKeyConverter c = new JcaPEMKeyConverter();
      if (o instanceof PEMKeyPair kp) return c.getPrivateKey(kp.getPrivateKeyInfo());
      if (o instanceof PrivateKeyInfo pki) return c.getPrivateKey(pki);
      throw new IOException("not a PEM private key");
    }
  }
}
