package dev.diagnostics.jvm.operator;

/** Turns failures into the one line a user reads. */
public final class Errors {
  private Errors() {}

  /** An error whose message is already the whole story. */
  public static final class Fatal extends RuntimeException {
    public Fatal(String message) {
      super(message);
    }
  }

  public static String oneLine(Throwable e) {
    if (e instanceof Fatal) return e.getMessage();
    for (Throwable t = e; t != null; t = t.getCause()) {
      // the API server's own words, not the client's request dump
      if (t instanceof io.fabric8.kubernetes.client.KubernetesClientException k
          && k.getStatus() != null
          && k.getStatus().getMessage() != null) {
        return "the API server answered " + k.getCode() + ": " + k.getStatus().getMessage();
      }
    }
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) root = root.getCause();
    String msg = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
    if (root != e && e.getMessage() != null && !e.getMessage().contains(msg))
      msg = e.getMessage() + ": " + msg;
    return msg.replace("An error has occurred.: ", "").replaceAll("\\s+", " ").trim();
  }
}
