import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Threads whose names a hostile tenant would choose: the text format's quote, backslash and
 * newline, a forged series and a forged TYPE line, a name whose 63-byte prefix (what the
 * probe reads) ends inside a multi-byte character, and names that reach the probe as bytes
 * that are not UTF-8. Usage: HostileNames DIR; writes DIR/ready,
 * waits for DIR/go, starts one thread of each name, writes DIR/done, waits for DIR/stop.
 */
public class HostileNames {
    static final String[] NAMES = {
        "x\"y",
        "back\\slash",
        "nl\njvmdiag_forged_total{namespace=\"kube-system\",pod=\"victim\"} 1",
        "# TYPE jvmdiag_forged counter",
        "a".repeat(62) + "\u4e2d\u4e2d",
        "close\"} 1\nother_forged 2",
        "lone\ud800surrogate", // HotSpot's modified UTF-8 makes it ED A0 80: not UTF-8
        "nul\u0000byte",       // and this C0 80
    };

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        Files.writeString(dir.resolve("ready"), "");
        while (!Files.exists(dir.resolve("go"))) Thread.sleep(20);
        for (String n : NAMES) {
            Thread t = new Thread(() -> { }, n);
            t.start();
            t.join();
        }
        Files.writeString(dir.resolve("done"), "");
        while (!Files.exists(dir.resolve("stop"))) Thread.sleep(20);
    }
}
