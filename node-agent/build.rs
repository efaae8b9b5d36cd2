//! Compiles src/bpf/<collector>.bpf.c and generates one libbpf-rs skeleton per file.
//!
//! vmlinux.h is generated here from the build host's kernel BTF (bpftool) rather than
//! checked in: the programs only use `struct pt_regs`, read at the fixed offsets of the
//! user register frame (no CO-RE relocations, `BPF_NO_PRESERVE_ACCESS_INDEX`; asserted in
//! common.bpf.h), so the BTF of any recent kernel yields a working object, and a 3 MB
//! generated header does not belong in git. Override with VMLINUX_BTF=/path.
//!
//! The histogram bounds come from monitoring/histogram-bounds.txt (the one definition every
//! part generates from; JVMDIAG_HISTOGRAM_BOUNDS=/path overrides, e.g. in an image build):
//! `hist_bounds.h` (HIST_BOUNDS, for the shapes in jvm.h), `hist_slot.bpf.h` (the probes'
//! bucket function) and `hist_bounds.rs` (the exposition's `le` values).
//!
//! `jvmdiag_agent_build_info` gets the git commit (JVMDIAG_REVISION, else `git rev-parse
//! HEAD`, else "unknown") and rustc's version as compile-time env vars.
use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let btf = env::var("VMLINUX_BTF").unwrap_or_else(|_| "/sys/kernel/btf/vmlinux".into());
    println!("cargo:rerun-if-env-changed=VMLINUX_BTF");
    let vmlinux = out.join("vmlinux.h");
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file", &btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| {
            panic!("running bpftool to generate vmlinux.h: {e} (install bpftool: make setup)")
        });
    if !dump.status.success() {
        panic!(
            "bpftool btf dump file {btf} failed: {} (the build needs kernel BTF; set VMLINUX_BTF=/path/to/vmlinux)",
            String::from_utf8_lossy(&dump.stderr).trim()
        );
    }
    fs::write(&vmlinux, dump.stdout).expect("write vmlinux.h");
    histogram_bounds(&out);
    build_info();

    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => panic!("unsupported target arch {other}"),
        Err(_) => "x86",
    };
    let multiarch = format!(
        "-I/usr/include/{}-linux-gnu",
        env::var("CARGO_CFG_TARGET_ARCH").unwrap_or("x86_64".into())
    );
    println!("cargo:rerun-if-changed=src/bpf");
    let mut sources: Vec<PathBuf> = fs::read_dir("src/bpf")
        .expect("src/bpf")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    sources.sort();
    // skels.rs: one `pub mod <collector>` per .bpf.c, included by src/skel.rs, so a new
    // collector needs no edit there; each with the `plain::Plain` impls of its map shapes.
    let header_structs = header_structs();
    let mut mods = String::new();
    for src in sources {
        let stem =
            src.file_name().unwrap().to_string_lossy().trim_end_matches(".bpf.c").to_string();
        let skel = out.join(format!("{stem}.skel.rs"));
        SkeletonBuilder::new()
            .source(&src)
            .clang_args([
                format!("-I{}", out.display()),
                "-Isrc/bpf".to_string(),
                multiarch.clone(),
                format!("-D__TARGET_ARCH_{arch}"),
                // No CO-RE: the programs touch only struct pt_regs, whose layout is the
                // user ABI (asserted in common.bpf.h); without relocations libbpf does not
                // load the kernel's BTF per object at load time.
                "-DBPF_NO_PRESERVE_ACCESS_INDEX".to_string(),
                "-Wall".to_string(),
                "-O2".to_string(),
                "-mcpu=v3".to_string(),
                "-g".to_string(),
            ])
            .build_and_generate(&skel)
            .unwrap_or_else(|e| panic!("building {}: {e:#}", src.display()));
        let generated =
            fs::read_to_string(&skel).unwrap_or_else(|e| panic!("reading {}: {e}", skel.display()));
        mods.push_str(&format!(
            "pub mod {stem} {{\n    include!(concat!(env!(\"OUT_DIR\"), \"/{stem}.skel.rs\"));\n{}}}\n",
            plain_impls(&generated, &header_structs)
        ));
    }
    fs::write(out.join("consts.rs"), header_consts()).expect("write consts.rs");
    mods.push_str(
        "pub mod consts {\n    include!(concat!(env!(\"OUT_DIR\"), \"/consts.rs\"));\n}\n",
    );
    fs::write(out.join("skels.rs"), mods).expect("write skels.rs");
}

/// consts.rs: every integer constant of the shared headers (src/bpf/*.h), `#define NAME 123`
/// and `NAME = 123,` in an enum, as a Rust const (u64 when the literal is `ULL` or does not
/// fit a u32), so the loader never mirrors a number of the BPF side by hand.
fn header_consts() -> String {
    let mut headers: Vec<PathBuf> = fs::read_dir("src/bpf")
        .expect("src/bpf")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "h"))
        .collect();
    headers.sort();
    let mut seen = std::collections::BTreeMap::new();
    let mut out = String::new();
    for h in headers {
        let text = fs::read_to_string(&h).unwrap_or_else(|e| panic!("{}: {e}", h.display()));
        let mut in_enum = false;
        for line in text.lines() {
            let code = line.split("/*").next().unwrap_or("").trim();
            let (name, value) = if let Some(rest) = code.strip_prefix("#define ") {
                let mut parts = rest.split_whitespace();
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(n), Some(v), None) => (n, v),
                    _ => continue,
                }
            } else if code.starts_with("enum ") && code.ends_with('{') {
                in_enum = true;
                continue;
            } else if in_enum && code.starts_with('}') {
                in_enum = false;
                continue;
            } else if in_enum {
                match code.trim_end_matches(',').split_once('=') {
                    Some((n, v)) => (n.trim(), v.trim()),
                    None => continue,
                }
            } else {
                continue;
            };
            let Some((value, wide)) = integer_literal(value) else { continue };
            if let Some(first) = seen.insert(name.to_string(), h.display().to_string()) {
                panic!("{name} is defined in both {first} and {}", h.display());
            }
            let (ty, literal) = if wide || value > u32::MAX as u64 {
                ("u64", format!("{value:#x}"))
            } else {
                ("u32", value.to_string())
            };
            out.push_str(&format!(
                "/// {name} in {}\npub const {name}: {ty} = {literal};\n",
                h.display()
            ));
        }
    }
    out
}

/// `123`, `0x7b`, with an optional u/l suffix: (value, whether the suffix says 64 bits).
fn integer_literal(s: &str) -> Option<(u64, bool)> {
    let digits = s.trim_end_matches(['u', 'U', 'l', 'L']);
    let wide = s[digits.len()..].to_ascii_lowercase().contains("ll");
    let value = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    Some((value, wide))
}

/// The `unsafe impl plain::Plain` of one skeleton (appended to its module in skels.rs), so
/// the agent can decode map keys and values from bytes: one for each struct of the shared
/// headers (`struct NAME {` in src/bpf/*.h, e.g. `name_key`, `hist`, `mon_stat`) that the
/// skeleton's generated `types` has and that is plain old data.
///
/// libbpf-cargo writes each C struct as a `#[repr(C)]` struct with one `pub name: type,`
/// per line and its padding as explicit `__pad_N: [u8; N]` fields; C `_Bool` becomes
/// `MaybeUninit<bool>`, enums newtypes, pointers `*mut`. A struct is plain old data when
/// every field is an integer, an array of them, or another such struct of the same
/// `types`: any byte pattern is then a valid value. Anything else (a pointer, a bool, an
/// enum, a union, a line not of that shape) leaves the struct without the impl, so code
/// that decodes it does not compile. Each impl comes with a compile-time check that the
/// struct's size is the sum of its fields' (no padding the compiler added), for it and
/// every struct inside it.
fn plain_impls(skel: &str, header_structs: &BTreeSet<String>) -> String {
    let structs = repr_c_structs(skel);
    let mut out = String::new();
    let mut checked = BTreeSet::new();
    for name in header_structs {
        if !is_pod(name, &structs, 0) {
            continue;
        }
        out.push_str(&format!("    unsafe impl plain::Plain for types::{name} {{}}\n"));
        let mut todo = vec![name.clone()];
        while let Some(s) = todo.pop() {
            if !checked.insert(s.clone()) {
                continue;
            }
            let fields = structs.get(&s).and_then(Option::as_ref).expect("checked POD above");
            let sum: Vec<String> =
                fields.iter().map(|t| format!("std::mem::size_of::<{}>()", qualified(t))).collect();
            let sum = if sum.is_empty() { "0".to_string() } else { sum.join(" + ") };
            out.push_str(&format!(
                "    const _: () = assert!(std::mem::size_of::<types::{s}>() == {sum});\n"
            ));
            todo.extend(fields.iter().map(|t| element(t).to_string()).filter(|t| !is_integer(t)));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "    // SAFETY (every impl below): a #[repr(C)] struct of integers, integer arrays and\n    \
         // such structs only, without padding the compiler added (asserted): every byte\n    \
         // pattern is a value.\n{out}"
    )
}

/// The `#[repr(C)] pub struct NAME { … }` of a skeleton's `types` module: name -> the types of
/// its fields, or None for a struct whose body is not only `pub name: type,` lines.
fn repr_c_structs(skel: &str) -> BTreeMap<String, Option<Vec<String>>> {
    let mut structs = BTreeMap::new();
    let mut lines = skel.lines();
    let Some(indent) = lines.by_ref().find_map(|l| l.strip_suffix("pub mod types {")) else {
        return structs;
    };
    let end = format!("{indent}}}");
    let mut lines = lines.take_while(|l| *l != end).map(str::trim);
    while let Some(line) = lines.next() {
        if line != "#[repr(C)]" {
            continue;
        }
        let Some(name) = lines
            .next()
            .and_then(|l| l.strip_prefix("pub struct "))
            .and_then(|l| l.strip_suffix(" {"))
        else {
            continue;
        };
        let mut fields = Some(Vec::new());
        for l in lines.by_ref() {
            if l == "}" {
                break;
            }
            let ty = l
                .strip_prefix("pub ")
                .and_then(|l| l.strip_suffix(','))
                .and_then(|l| l.split_once(": "))
                .map(|(_, t)| t.to_string());
            match (ty, fields.as_mut()) {
                (Some(t), Some(f)) => f.push(t),
                _ => fields = None,
            }
        }
        structs.insert(name.to_string(), fields);
    }
    structs
}

fn is_integer(t: &str) -> bool {
    matches!(t, "u8" | "i8" | "u16" | "i16" | "u32" | "i32" | "u64" | "i64" | "u128" | "i128")
}

/// `[T; N]` (nested too) -> T; any other type as it is.
fn element(t: &str) -> &str {
    match t.strip_prefix('[').and_then(|t| t.strip_suffix(']')).and_then(|t| t.rsplit_once("; ")) {
        Some((elem, n)) if n.parse::<usize>().is_ok() => element(elem),
        _ => t,
    }
}

/// Whether `t` is an integer, an array of plain-old-data, or a struct of `structs` whose
/// fields all are.
fn is_pod(t: &str, structs: &BTreeMap<String, Option<Vec<String>>>, depth: u32) -> bool {
    let t = element(t);
    if is_integer(t) {
        return true;
    }
    // C structs cannot contain themselves; the bound only keeps a malformed input finite.
    depth < 32
        && structs
            .get(t)
            .and_then(Option::as_ref)
            .is_some_and(|f| f.iter().all(|f| is_pod(f, structs, depth + 1)))
}

/// A field type as seen from the skeleton's module: struct names are in `types`.
fn qualified(t: &str) -> String {
    match t.strip_prefix('[').and_then(|t| t.strip_suffix(']')).and_then(|t| t.rsplit_once("; ")) {
        Some((elem, n)) => format!("[{}; {n}]", qualified(elem)),
        None if is_integer(t) => t.to_string(),
        None => format!("types::{t}"),
    }
}

/// The names of the structs the shared headers (src/bpf/*.h) define: the shapes of the maps
/// the agent reads.
fn header_structs() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for h in fs::read_dir("src/bpf").expect("src/bpf").filter_map(|e| e.ok().map(|e| e.path())) {
        if h.extension().is_none_or(|x| x != "h") {
            continue;
        }
        let text = fs::read_to_string(&h).unwrap_or_else(|e| panic!("{}: {e}", h.display()));
        for line in text.lines() {
            if let Some(name) =
                line.trim().strip_prefix("struct ").and_then(|l| l.strip_suffix(" {"))
            {
                names.insert(name.trim().to_string());
            }
        }
    }
    names
}

/// `JVMDIAG_REVISION` and `JVMDIAG_RUSTC_VERSION` for `jvmdiag_agent_build_info` (src/serve.rs):
/// the commit the agent was built from — JVMDIAG_REVISION when the builder sets it (a source
/// tree without .git), else the repository's HEAD, else "unknown" — and rustc's version.
fn build_info() {
    println!("cargo:rerun-if-env-changed=JVMDIAG_REVISION");
    let revision = env::var("JVMDIAG_REVISION")
        .ok()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .or_else(git_head)
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=JVMDIAG_REVISION={revision}");
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    // "rustc 1.89.0 (29483883e 2025-08-04)" -> "1.89.0"
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=JVMDIAG_RUSTC_VERSION={rustc_version}");
}

/// The commit of HEAD, and a rerun of this script when HEAD moves (a checkout changes HEAD, a
/// commit the branch's ref); None outside a git work tree or without git.
fn git_head() -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let head = git(&["rev-parse", "--verify", "-q", "HEAD"])?;
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // only files that exist: a missing one would rerun this script at every build
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if std::path::Path::new(&path).is_file() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    Some(head)
}

/// One bound of monitoring/histogram-bounds.txt: its `le` text and its value in ns.
struct Bound {
    le: String,
    ns: u64,
}

/// Reads monitoring/histogram-bounds.txt and writes the BPF and Rust sides of the bounds.
fn histogram_bounds(out: &std::path::Path) {
    println!("cargo:rerun-if-env-changed=JVMDIAG_HISTOGRAM_BOUNDS");
    let path = env::var("JVMDIAG_HISTOGRAM_BOUNDS").map(PathBuf::from).unwrap_or_else(|_| {
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
            .join("../monitoring/histogram-bounds.txt")
    });
    println!("cargo:rerun-if-changed={}", path.display());
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (set JVMDIAG_HISTOGRAM_BOUNDS)", path.display()));
    let mut bounds: Vec<Bound> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let mut cols = line.split_whitespace();
        let (Some(le), Some(spec), None) = (cols.next(), cols.next(), cols.next()) else {
            panic!("{}: want `le  specDuration`, got {line:?}", at());
        };
        let ns = decimal_ns(le, 1_000_000_000)
            .unwrap_or_else(|| panic!("{}: le {le:?} is not a decimal number of seconds", at()));
        let spec_ns = spec_duration_ns(spec)
            .unwrap_or_else(|| panic!("{}: {spec:?} is not a duration (us, ms or s)", at()));
        assert_eq!(ns, spec_ns, "{}: le {le} and spec duration {spec} differ", at());
        assert!(
            le.contains('.'),
            "{}: le {le:?} must be written as exposed (a float: 1.0, not 1)",
            at()
        );
        if let Some(prev) = bounds.last() {
            assert!(ns > prev.ns, "{}: bounds must increase", at());
        }
        bounds.push(Bound { le: le.to_string(), ns });
    }
    assert!(!bounds.is_empty(), "{}: no bounds", path.display());
    let n = bounds.len();
    let src = path.display();

    let mut h = format!("/* Generated by build.rs from {src}: do not edit. */\n");
    h.push_str("#ifndef JVMDIAG_HIST_BOUNDS_H\n#define JVMDIAG_HIST_BOUNDS_H\n");
    h.push_str(&format!("#define HIST_BOUNDS {n}\n#endif\n"));
    fs::write(out.join("hist_bounds.h"), h).expect("write hist_bounds.h");

    let mut c = format!("/* Generated by build.rs from {src}: do not edit. */\n");
    c.push_str("#ifndef JVMDIAG_HIST_SLOT_BPF_H\n#define JVMDIAG_HIST_SLOT_BPF_H\n");
    c.push_str("/* The bucket of a duration in ns: the first bound it does not exceed; HIST_BOUNDS is +Inf. */\n");
    c.push_str("static __always_inline __u32 hist_slot(__u64 ns)\n{\n");
    for (i, b) in bounds.iter().enumerate() {
        c.push_str(&format!("\tif (ns <= {}ULL) /* {} s */\n\t\treturn {i};\n", b.ns, b.le));
    }
    c.push_str(&format!("\treturn {n};\n}}\n#endif\n"));
    fs::write(out.join("hist_slot.bpf.h"), c).expect("write hist_slot.bpf.h");

    let mut r = format!("// Generated by build.rs from {src}: do not edit.\n");
    r.push_str(&format!("/// Histogram buckets below +Inf (HIST_BOUNDS of the BPF side).\npub const HIST_BOUNDS: usize = {n};\n"));
    r.push_str("/// Bucket upper bounds in seconds; +Inf is implicit.\npub const BOUNDS_SECONDS: [f64; HIST_BOUNDS] = [");
    r.push_str(&bounds.iter().map(|b| b.le.clone()).collect::<Vec<_>>().join(", "));
    r.push_str("];\n/// Bucket upper bounds in ns, as the probes compare them.\npub const BOUNDS_NS: [u64; HIST_BOUNDS] = [");
    r.push_str(&bounds.iter().map(|b| b.ns.to_string()).collect::<Vec<_>>().join(", "));
    r.push_str("];\n/// The `le` label values, exactly as the exposition prints them.\npub const BOUNDS_LE: [&str; HIST_BOUNDS] = [");
    r.push_str(&bounds.iter().map(|b| format!("{:?}", b.le)).collect::<Vec<_>>().join(", "));
    r.push_str("];\n");
    fs::write(out.join("hist_bounds.rs"), r).expect("write hist_bounds.rs");
}

/// `2.5` with `unit` = ns per unit -> ns, exactly (no float rounding); None if not a decimal.
fn decimal_ns(s: &str, unit: u64) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = unit.to_string().len() - 1;
    if int.is_empty()
        || frac.len() > digits
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let frac_ns: u64 =
        if frac.is_empty() { 0 } else { format!("{frac:0<digits$}").parse().ok()? };
    int.parse::<u64>().ok()?.checked_mul(unit)?.checked_add(frac_ns)
}

/// `100us`, `2.5ms`, `60s` (the spec's duration syntax for the bounds) -> ns.
fn spec_duration_ns(s: &str) -> Option<u64> {
    if let Some(v) = s.strip_suffix("us") {
        decimal_ns(v, 1_000)
    } else if let Some(v) = s.strip_suffix("ms") {
        decimal_ns(v, 1_000_000)
    } else {
        decimal_ns(s.strip_suffix('s')?, 1_000_000_000)
    }
}
