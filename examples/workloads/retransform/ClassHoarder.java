import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The application under the retransforming agent: a service-like loop that loads many
 * classes (every class of the JDK's modules, as a large application with its frameworks
 * would) and then serves "requests", reporting the longest stall it sees. The stall is
 * the agent's RedefineClasses safepoint: the JVM's -Xlog:safepoint shows the same.
 *
 * <p>Usage: {@code java -javaagent:retransform-agent.jar -jar class-hoarder.jar [modules=all | none | comma-separated module names] [generatedClasses=40000]}
 */
public final class ClassHoarder {
    private static final class Gen extends ClassLoader {
        Gen() { super(ClassHoarder.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    /** A minimal class file: public class NAME extends Object, no members. */
    static byte[] emptyClass(String internalName) throws java.io.IOException {
        java.io.ByteArrayOutputStream bos = new java.io.ByteArrayOutputStream();
        java.io.DataOutputStream o = new java.io.DataOutputStream(bos);
        o.writeInt(0xCAFEBABE);
        o.writeShort(0);
        o.writeShort(49);
        o.writeShort(5);                                   // constant pool count
        o.writeByte(1); o.writeUTF(internalName);          // 1
        o.writeByte(7); o.writeShort(1);                   // 2 this
        o.writeByte(1); o.writeUTF("java/lang/Object");    // 3
        o.writeByte(7); o.writeShort(3);                   // 4 super
        o.writeShort(0x21);
        o.writeShort(2);
        o.writeShort(4);
        o.writeShort(0); o.writeShort(0); o.writeShort(0); o.writeShort(0);
        return bos.toByteArray();
    }

    public static void main(String[] args) throws Exception {
        String modules = args.length > 0 ? args[0] : "all";
        List<Class<?>> keep = new ArrayList<>();
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<String> names = new ArrayList<>();
        if (modules.equals("none")) {
            // only the generated classes below
        } else if (modules.equals("all")) {
            try (Stream<Path> ms = Files.list(jrt.getPath("/modules"))) {
                ms.forEach(p -> names.add(p.getFileName().toString()));
            }
        } else {
            names.addAll(List.of(modules.split(",")));
        }
        for (String m : names) {
            Path root = jrt.getPath("/modules", m.trim());
            if (!Files.isDirectory(root)) {
                System.err.println("class-hoarder: module " + m + " not in this JDK image, skipped");
                continue;
            }
            try (Stream<Path> files = Files.walk(root)) {
                files.filter(p -> p.toString().endsWith(".class") && !p.endsWith("module-info.class"))
                     .forEach(p -> {
                         String name = root.relativize(p).toString().replace('/', '.');
                         name = name.substring(0, name.length() - ".class".length());
                         try {
                             keep.add(Class.forName(name, false, ClassLoader.getSystemClassLoader()));
                         } catch (Throwable ignored) { /* some classes need absent optional modules */ }
                     });
            }
        }
        // Plus generated classes, like the proxies and generated code of a large framework.
        int generated = args.length > 1 ? Integer.parseInt(args[1]) : 40_000;
        Gen gen = new Gen();
        for (int i = 0; i < generated; i++) {
            String name = "app.generated.Proxy" + i;
            keep.add(gen.define(name, emptyClass(name.replace('.', '/'))));
        }
        System.out.printf("class-hoarder: loaded %d classes; serving%n", keep.size());
        long worst = 0, lastReport = System.nanoTime(), requests = 0;
        long prev = System.nanoTime();
        while (true) {
            // one "request": a little work, then a short sleep
            long x = 0;
            for (int i = 0; i < 10_000; i++) x += i * 31L ^ keep.size();
            if (x == 42) System.out.print("");
            requests++;
            Thread.sleep(5);
            long now = System.nanoTime();
            worst = Math.max(worst, now - prev - 5_000_000L);
            prev = now;
            if (now - lastReport > 10_000_000_000L) {
                System.out.printf("class-hoarder: %d requests, longest stall %d ms%n", requests, worst / 1_000_000);
                worst = 0;
                lastReport = now;
            }
        }
    }
}
