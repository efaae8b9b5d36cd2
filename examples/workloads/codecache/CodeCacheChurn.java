import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * JIT / code-cache incident: the application keeps generating classes (think proxies,
 * templates, scripting) whose hot methods get compiled by C1 and then C2. Under a small
 * {@code -XX:ReservedCodeCacheSize} the code cache fills until HotSpot prints
 * "CodeCache is full. Compiler has been disabled."; old generations are then dropped
 * (their classes unload, their code is freed) and the same methods are compiled again:
 * the same names recompiled over and over.
 *
 * <p>Usage: {@code java -XX:ReservedCodeCacheSize=16m -jar codecache-churn.jar [classesPerGeneration=100] [keepGenerations=40] [seconds=0 (forever)]}
 */
public final class CodeCacheChurn {
    private static final MethodType RUN = MethodType.methodType(int.class, int.class);
    private static final int OPS = 32; // arithmetic ops per loop iteration: bigger methods fill the cache sooner

    public static void main(String[] args) throws Throwable {
        int perGen = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        int keep = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        long seconds = args.length > 2 ? Long.parseLong(args[2]) : 0;
        long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        Deque<List<MethodHandle>> generations = new ArrayDeque<>();
        long sink = 0;
        int gen = 0;
        long lastReport = 0;
        while (System.nanoTime() < deadline) {
            GenLoader loader = new GenLoader();
            List<MethodHandle> methods = new ArrayList<>(perGen);
            for (int i = 0; i < perGen; i++) {
                String name = "gen.Gen" + i; // same names in every generation: recompiled again and again
                Class<?> c = loader.define(name, classBytes(name.replace('.', '/'), i));
                methods.add(MethodHandles.lookup().findStatic(c, "run", RUN));
            }
            // make every method hot enough for C1 (tier 3) and then C2 (tier 4, via its loop back-edges)
            for (int round = 0; round < 1000; round++) {
                for (MethodHandle m : methods) sink += (int) m.invokeExact(round);
            }
            // keep the older generations hot too, so their code is not flushed as cold
            for (List<MethodHandle> older : generations) {
                for (int round = 0; round < 20; round++) {
                    for (MethodHandle m : older) sink += (int) m.invokeExact(round);
                }
            }
            generations.addLast(methods);
            if (generations.size() > keep) generations.removeFirst(); // lets that generation unload
            gen++;
            if (System.nanoTime() - lastReport > 5_000_000_000L) {
                lastReport = System.nanoTime();
                System.out.printf("codecache-churn: generation %d, %s, compilations so far %s ms%n",
                        gen, codeCache(), ManagementFactory.getCompilationMXBean().getTotalCompilationTime());
            }
        }
        System.out.println("codecache-churn: done " + (sink == 42 ? "" : ""));
        System.exit(0);
    }

    private static String codeCache() {
        long used = 0, max = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getName().startsWith("CodeHeap") || p.getName().equals("CodeCache")) {
                used += p.getUsage().getUsed();
                max += p.getUsage().getMax();
            }
        }
        return String.format("code cache %d/%d KiB", used / 1024, max / 1024);
    }

    private static final class GenLoader extends ClassLoader {
        GenLoader() { super(CodeCacheChurn.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    /**
     * A class file (version 49: no StackMapTable needed) with one method
     * {@code public static int run(int x)}: a 64-iteration loop of OPS multiply/add/xor
     * steps whose constants differ per class, so every class compiles to its own code.
     */
    static byte[] classBytes(String internalName, int seed) throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        DataOutputStream o = new DataOutputStream(bos);
        o.writeInt(0xCAFEBABE);
        o.writeShort(0);
        o.writeShort(49);
        int firstInt = 8;
        o.writeShort(firstInt + 2 * OPS); // constant pool count (entries 1..count-1)
        utf8(o, internalName);                    // 1
        o.writeByte(7); o.writeShort(1);          // 2 Class this
        utf8(o, "java/lang/Object");              // 3
        o.writeByte(7); o.writeShort(3);          // 4 Class super
        utf8(o, "run");                           // 5
        utf8(o, "(I)I");                          // 6
        utf8(o, "Code");                          // 7
        for (int k = 0; k < 2 * OPS; k++) {       // 8.. Integer constants
            o.writeByte(3);
            o.writeInt((seed + 1) * 7919 + k * 104729 | 1);
        }
        o.writeShort(0x21); // public super
        o.writeShort(2);
        o.writeShort(4);
        o.writeShort(0); // interfaces
        o.writeShort(0); // fields
        o.writeShort(1); // methods
        o.writeShort(0x09); // public static
        o.writeShort(5);
        o.writeShort(6);
        o.writeShort(1); // attributes: Code
        ByteArrayOutputStream code = new ByteArrayOutputStream();
        DataOutputStream c = new DataOutputStream(code);
        c.writeByte(0x03); // iconst_0
        c.writeByte(0x3c); // istore_1
        int loop = code.size();
        c.writeByte(0x1b); // iload_1
        c.writeByte(0x10); c.writeByte(64); // bipush 64
        int branch = code.size();
        c.writeByte(0xa2); c.writeShort(0); // if_icmpge END (patched)
        for (int k = 0; k < OPS; k++) {
            c.writeByte(0x1a);                                   // iload_0
            c.writeByte(0x13); c.writeShort(firstInt + 2 * k);   // ldc_w
            c.writeByte(0x68);                                   // imul
            c.writeByte(0x1b);                                   // iload_1
            c.writeByte(0x60);                                   // iadd
            c.writeByte(0x13); c.writeShort(firstInt + 2 * k + 1);
            c.writeByte(0x82);                                   // ixor
            c.writeByte(0x3b);                                   // istore_0
        }
        c.writeByte(0x84); c.writeByte(1); c.writeByte(1);      // iinc 1, 1
        int back = code.size();
        c.writeByte(0xa7); c.writeShort(loop - back);           // goto loop
        int end = code.size();
        c.writeByte(0x1a);                                       // iload_0
        c.writeByte(0xac);                                       // ireturn
        byte[] bc = code.toByteArray();
        int off = end - branch;
        bc[branch + 1] = (byte) (off >> 8);
        bc[branch + 2] = (byte) off;
        o.writeShort(7);
        o.writeInt(2 + 2 + 4 + bc.length + 2 + 2);
        o.writeShort(3); // max stack
        o.writeShort(2); // max locals
        o.writeInt(bc.length);
        o.write(bc);
        o.writeShort(0); // exception table
        o.writeShort(0); // code attributes
        o.writeShort(0); // class attributes
        return bos.toByteArray();
    }

    private static void utf8(DataOutputStream o, String s) throws IOException {
        o.writeByte(1);
        o.writeUTF(s);
    }
}
