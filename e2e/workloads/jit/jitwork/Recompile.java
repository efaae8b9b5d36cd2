package jitwork;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.MutableCallSite;

/**
 * A recompilation storm: hot() inlines the target of a MutableCallSite; every round sets
 * a new target, which makes HotSpot throw away every nmethod that depends on the call
 * site (hot() among them), and hot() is compiled again once it is hot again.
 * Usage: Recompile ROUNDS [START_DELAY_MS]; prints "done" and idles until killed.
 * Run it with -XX:CompileCommand=dontinline,jitwork.Recompile::hot so that only hot()
 * depends on the call site (inlined into main, main's OSR code would be recompiled too).
 */
public class Recompile {
    static final MutableCallSite SITE = new MutableCallSite(MethodType.methodType(int.class, int.class));
    static final MethodHandle INVOKER = SITE.dynamicInvoker();
    static volatile long sink;

    static int hot(int x) throws Throwable {
        int s = 0;
        for (int i = 0; i < 100; i++) {
            s += (int) INVOKER.invokeExact(x + i);
        }
        return s;
    }

    public static void main(String[] args) throws Throwable {
        int rounds = Integer.parseInt(args[0]);
        Thread.sleep(args.length > 1 ? Long.parseLong(args[1]) : 3000);
        for (int r = 0; r < rounds; r++) {
            SITE.setTarget(MethodHandles.dropArguments(MethodHandles.constant(int.class, r), 0, int.class));
            long s = 0;
            for (int i = 0; i < 20000; i++) {
                s += hot(i);
            }
            sink += s;
        }
        System.out.println("done");
        Thread.sleep(Long.MAX_VALUE);
    }
}
