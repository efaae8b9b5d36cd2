//! Line formats and naming rules, from the JDK's sources and real outputs.
use jvmdiag_inspect::procfs::jvm_short_name;
use jvmdiag_inspect::safepoint_log::{self, Parser};

#[test]
fn safepoint_line_formats() {
    // JDK 17 (Debian build, real output): with Cleanup.
    let r = safepoint_log::parse_line("[0.755s][info ][safepoint        ] Safepoint \"G1CollectForAllocation\", Time since last: 688114443 ns, Reaching safepoint: 78146 ns, Cleanup: 164055 ns, At safepoint: 15411399 ns, Total: 15653600 ns").unwrap();
    assert_eq!(r.vm_operation, "G1CollectForAllocation");
    assert_eq!(
        (r.reaching_ns, r.cleanup_ns, r.at_safepoint_ns, r.total_ns),
        (78146, Some(164055), 15411399, 15653600)
    );
    assert_eq!(
        (r.since_last_ns, r.leaving_ns, r.uptime_seconds),
        (Some(688114443), None, Some(0.755))
    );
    // JDK 13-21 without Cleanup (HotSpot's SafepointTracing::end), default decorations.
    let r = safepoint_log::parse_line("[12.001s][info][safepoint] Safepoint \"RedefineClasses\", Time since last: 5 ns, Reaching safepoint: 1000 ns, At safepoint: 3000000000 ns, Total: 3000001000 ns").unwrap();
    assert_eq!(
        (r.vm_operation.as_str(), r.at_safepoint_ns, r.total_ns, r.cleanup_ns),
        ("RedefineClasses", 3_000_000_000, 3_000_001_000, None)
    );
    // JDK 25 (Temurin, real output): Leaving safepoint and Threads.
    let r = safepoint_log::parse_line("[1.212s][1211824636ns][info ][safepoint      ] Safepoint \"G1CollectFull\", Time since last: 257994616 ns, Reaching safepoint: 37005 ns, At safepoint: 25901863 ns, Leaving safepoint: 788265 ns, Total: 26727133 ns, Threads: 0 runnable, 10 total").unwrap();
    assert_eq!(
        (r.reaching_ns, r.at_safepoint_ns, r.leaving_ns, r.total_ns),
        (37005, 25901863, Some(788265), 26727133)
    );
    assert_eq!(r.uptime_seconds, Some(1.212));
    // Other decorations: time, uptimemillis only, no decorations at all.
    let r = safepoint_log::parse_line("[2026-11-22T04:00:00.123+0000][1234ms] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 2 ns, At safepoint: 3 ns, Total: 5 ns").unwrap();
    assert_eq!((r.vm_operation.as_str(), r.uptime_seconds), ("Cleanup", Some(1.234)));
    let r = safepoint_log::parse_line("Safepoint \"ThreadDump\", Time since last: 1 ns, Reaching safepoint: 2 ns, At safepoint: 3 ns, Total: 5 ns").unwrap();
    assert_eq!((r.vm_operation.as_str(), r.uptime_seconds), ("ThreadDump", None));
    // Not records: the stats table, cleanup sub-tags, the debug "initiated" line.
    for l in [
        "[0.755s][info ][safepoint,stats  ] G1CollectForAllocation       [             11               0 ][            78146     164055   15411399   15653600 ]               0",
        "[0.739s][info ][safepoint,cleanup] safepoint cleanup tasks, 0.0001610 secs",
        "[0.739s][debug][safepoint] Safepoint synchronization initiated using futex wait barrier. (11 threads)",
        "[0.200s][info][safepoint] Application time: 0.1234567 seconds",
    ] {
        assert_eq!(safepoint_log::parse_line(l), None, "{l}");
    }
}

#[test]
fn jdk11_three_line_form() {
    // JDK 11: runtimeService.cpp's "Total time…" line, the operation from safepoint.cpp's
    // "Entering safepoint region" two lines before.
    let log = "\
[10.001s][info][safepoint] Application time: 1.0001234 seconds
[10.001s][info][safepoint] Entering safepoint region: G1CollectForAllocation
[10.012s][info][safepoint] Leaving safepoint region
[10.012s][info][safepoint] Total time for which application threads were stopped: 0.0110234 seconds, Stopping threads took: 0.0000345 seconds
[11.000s][info][safepoint] Total time for which application threads were stopped: 0.0000100 seconds, Stopping threads took: 0.0000010 seconds
";
    let mut p = Parser::new();
    let recs: Vec<_> = log.lines().filter_map(|l| p.feed(l)).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].vm_operation, "G1CollectForAllocation");
    assert_eq!(
        (recs[0].total_ns, recs[0].reaching_ns, recs[0].at_safepoint_ns),
        (11_023_400, 34_500, 10_988_900)
    );
    assert_eq!(recs[0].uptime_seconds, Some(10.012));
    assert_eq!(recs[1].vm_operation, "none", "no Entering line: a safepoint without an operation");
    // parse_line alone leaves the operation empty.
    assert_eq!(safepoint_log::parse_line(log.lines().nth(3).unwrap()).unwrap().vm_operation, "");
}

#[test]
fn jvm_names() {
    let s = |v: &[&str]| jvm_short_name(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    assert_eq!(
        s(&["java", "-Xmx1g", "-cp", "/app/lib/*", "com.acme.shop.Checkout", "--port", "80"]),
        "Checkout"
    );
    assert_eq!(
        s(&["/usr/bin/java", "-Dx=y", "-jar", "/app/checkout-1.2.jar", "-cp", "x"]),
        "checkout-1.2.jar"
    );
    assert_eq!(s(&["java", "--module-path", "mods", "--module", "com.acme/com.acme.Main"]), "Main");
    assert_eq!(s(&["java", "-m", "com.acme"]), "com.acme");
    assert_eq!(s(&["java", "--module=com.acme/com.acme.App"]), "App");
    assert_eq!(
        s(&["java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-classpath", "a:b", "Main"]),
        "Main"
    );
    assert_eq!(
        s(&[
            "java",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "-XX:+UseG1GC",
            "@argfile",
            "Main"
        ]),
        "Main"
    );
    assert_eq!(
        s(&["java", "-javaagent:/a.jar=opt", "--source", "21", "/src/Hello.java"]),
        "Hello.java"
    );
    assert_eq!(s(&["java", "-version"]), "java");
    assert_eq!(s(&["/opt/app/bin/launcher", "-Xss1m"]), "launcher");
    assert_eq!(s(&[]), "unknown");
    assert_eq!(s(&["java", "-jar"]), "java", "-jar without a value");
    let long = format!("com.acme.{}", "A".repeat(100));
    assert_eq!(s(&["java", &long]).len(), 64);
    assert_eq!(s(&["java", "Evil\nName\u{7}"]), "Evil_Name_");
}
