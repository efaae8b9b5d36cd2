import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Build time (generate-resources, run as a single-file program): writes what the operator is built
 * from into its classes, for jvmdiag_operator_build_info (metrics/BuildInfo): the Maven version and
 * the git commit, taken from JVMDIAG_REVISION when the builder sets it (a source tree without .git,
 * e.g. hack/images/build.sh's `git archive` of an earlier commit), else from `git rev-parse HEAD`
 * in the project, else "unknown".
 *
 * <p>Usage: java GenerateBuildInfo.java VERSION PROJECT_DIR OUTPUT_FILE
 */
public final class GenerateBuildInfo {
  public static void main(String[] args) throws IOException, InterruptedException {
    if (args.length != 3)
      throw new IllegalArgumentException(
          "usage: GenerateBuildInfo VERSION PROJECT_DIR OUTPUT_FILE");
    String revision = System.getenv("JVMDIAG_REVISION");
    if (revision == null || revision.isBlank()) revision = gitHead(Path.of(args[1]));
    String text =
        "# what this jar was built from (src/build/GenerateBuildInfo.java)\n"
            + "version="
            + args[0].strip()
            + "\nrevision="
            + (revision == null ? "unknown" : revision.strip())
            + "\n";
    Path out = Path.of(args[2]);
    Files.createDirectories(out.getParent());
    // unchanged: not rewritten, so an incremental build does not repackage for nothing
    if (!Files.exists(out) || !Files.readString(out).equals(text)) Files.writeString(out, text);
  }

  /** HEAD's commit in dir's repository; null without git or outside a work tree. */
  static String gitHead(Path dir) throws InterruptedException {
    try {
      Process p =
          new ProcessBuilder("git", "-C", dir.toString(), "rev-parse", "--verify", "-q", "HEAD")
              .redirectErrorStream(false)
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
      String out = new String(p.getInputStream().readAllBytes()).strip();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return p.exitValue() == 0 && out.matches("[0-9a-f]{7,64}") ? out : null;
    } catch (IOException e) {
      return null;
    }
  }
}
