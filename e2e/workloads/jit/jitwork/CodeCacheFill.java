package jitwork;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;

/**
 * Fills the code cache the way a class-generating application does: the same class is
 * defined again and again by fresh class loaders (each copy a distinct class with its own
 * compiled code) and kept reachable, so nothing is unloaded.
 * Usage: CodeCacheFill COPIES [START_DELAY_MS]; prints "done" and idles until killed.
 */
public class CodeCacheFill {
    public static class Worker implements LongUnaryOperator {
        @Override
        public long applyAsLong(long x) {
            long s = x;
            for (int i = 0; i < 64; i++) {
                s = s * 31 + (i ^ (s >>> 7));
                if ((s & 15) == 3) {
                    s ^= i * 7L;
                }
            }
            return s;
        }
    }

    static final class Loader extends ClassLoader {
        Loader(ClassLoader parent) {
            super(parent);
        }

        Class<?> define(byte[] b) {
            return defineClass("jitwork.CodeCacheFill$Worker", b, 0, b.length);
        }
    }

    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int copies = Integer.parseInt(args[0]);
        byte[] bytes;
        try (InputStream in = CodeCacheFill.class.getResourceAsStream("CodeCacheFill$Worker.class")) {
            bytes = in.readAllBytes();
        }
        Thread.sleep(args.length > 1 ? Long.parseLong(args[1]) : 3000);
        List<LongUnaryOperator> keep = new ArrayList<>();
        for (int n = 0; n < copies; n++) {
            LongUnaryOperator w = (LongUnaryOperator) new Loader(CodeCacheFill.class.getClassLoader())
                    .define(bytes).getDeclaredConstructor().newInstance();
            keep.add(w);
            long s = 0;
            for (int i = 0; i < 6000; i++) {
                s += w.applyAsLong(i);
            }
            sink += s;
        }
        System.out.println("done " + keep.size());
        Thread.sleep(Long.MAX_VALUE);
    }
}
