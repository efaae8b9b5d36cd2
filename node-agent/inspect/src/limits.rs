//! Every bound in one place (documented in `docs/untrusted-input.md`).
//! Sizes are chosen well above what a real JVM produces and well below what would hurt the
//! agent; a value past a bound is refused with [`crate::Error::TooLarge`].

/// `/proc/PID/maps`: a JVM with 10 000 threads has ~30 000 mappings at ~100 bytes each.
pub const MAPS_MAX_BYTES: u64 = 4 << 20;
/// Mappings kept from one maps file.
pub const MAPS_MAX_ENTRIES: usize = 100_000;
/// `/proc/PID/status` is ~1.5 KiB.
pub const STATUS_MAX_BYTES: u64 = 64 << 10;
/// `/proc/PID/cmdline`: class paths can be long, ARG_MAX is 2 MiB by default.
pub const CMDLINE_MAX_BYTES: u64 = 4 << 20;
/// Arguments kept from one command line.
pub const CMDLINE_MAX_ARGS: usize = 65_536;
/// `/proc/PID/cgroup`: a dozen lines of a few hundred bytes.
pub const CGROUP_MAX_BYTES: u64 = 64 << 10;
/// Lines kept from one cgroup file.
pub const CGROUP_MAX_LINES: usize = 256;
/// hsperfdata: HotSpot's `-XX:PerfDataMemorySize` is 64 KiB by default and at most 2 MiB
/// (the flag's range in JDK 11–25); we allow twice that. A larger file is refused from its
/// size, before it is read.
pub const HSPERFDATA_MAX_BYTES: u64 = 4 << 20;
/// hsperfdata entries (a JDK 25 JVM has ~300).
pub const HSPERFDATA_MAX_ENTRIES: usize = 65_536;
/// Length of an hsperfdata counter name.
pub const HSPERFDATA_MAX_NAME: usize = 1024;
/// Length of an hsperfdata string value.
pub const HSPERFDATA_MAX_STRING: usize = 64 << 10;
/// A `libjvm.so` is ~20–25 MiB; debug builds more.
pub const ELF_MAX_BYTES: u64 = 512 << 20;
/// Section headers in one ELF file (libjvm has ~40).
pub const ELF_MAX_SECTIONS: usize = 65_535;
/// Symbols per table (libjvm's `.symtab` has 57 000–70 000): checked from the section
/// header, before the table (24 bytes per symbol, so at most 24 MB) is read.
pub const ELF_MAX_SYMBOLS: usize = 1_000_000;
/// A string table linked to a symbol table (libjvm's `.strtab` is 2.7–3.3 MB), checked
/// before it is read.
pub const ELF_MAX_STRTAB: u64 = 32 << 20;
/// A note section, USDT notes included (libjvm's `.note.stapsdt` is 53–56 KB): libbpf
/// reads them, so a larger one is refused before libbpf sees the file.
pub const ELF_MAX_NOTES: u64 = 4 << 20;
/// Length of a symbol name (C++ mangled names get long).
pub const ELF_MAX_NAME: usize = 64 << 10;
/// The per-JVM limits text (`jvm.diagnostics.dev/limits`, `JVMDIAG_LIMITS`): the operator
/// writes ~45 bytes.
pub const JVM_LIMITS_MAX_BYTES: usize = 512;
/// Items looked at in one limits text.
pub const JVM_LIMITS_MAX_ITEMS: usize = 16;
/// One line of the safepoint log.
pub const SAFEPOINT_LINE_MAX: usize = 64 << 10;
/// Entries returned by [`crate::root::ProcRoot::list_dir`] callers should pass at most this.
pub const DIR_MAX_ENTRIES: usize = 65_536;
/// Length of one field of a text file from `/proc` (a path, a name).
pub const PROC_MAX_FIELD: usize = 8192;
/// An options file a JVM reads at start (`@argfile`, `-XX:VMOptionsFile=`, `-XX:Flags=`):
/// real ones are a few KiB.
pub const OPTIONS_FILE_MAX_BYTES: u64 = 1 << 20;
/// Options files read for one JVM (each `@argfile` of its command line, one options file, one
/// flags file); past it the rest are not read.
pub const OPTIONS_FILES_MAX: usize = 16;
/// Options taken from one JVM's variables, command line and options files together.
pub const OPTIONS_MAX_TOKENS: usize = 65_536;
/// One read of a JVM's memory (`/proc/PID/mem`): the largest thing read at once is one
/// vmStructs entry or a page of a string.
pub const HOTSPOT_MAX_READ: usize = 64 << 10;
/// A NUL-terminated string read from a JVM's memory.
pub const HOTSPOT_MAX_STRING: usize = 4096;
/// Entries per vmStructs table (JDK 25 has ~1 400 fields, ~1 000 types, ~1 400 constants).
pub const VMSTRUCTS_MAX_ENTRIES: usize = 32_768;
/// One vmStructs entry (its stride; HotSpot's are 48 bytes at most).
pub const VMSTRUCTS_MAX_STRIDE: u64 = 256;
/// A type, field or constant name in vmStructs (the longest are templates, ~60 bytes).
pub const VMSTRUCTS_MAX_NAME: usize = 512;
/// The names of all four tables together (~100 KB in a real JVM), distinct strings only.
pub const VMSTRUCTS_MAX_NAMES_BYTES: usize = 4 << 20;
/// A field offset or a type size taken from vmStructs (the largest real one, JavaThread's
/// size, is ~2 KiB).
pub const HOTSPOT_MAX_OFFSET: u64 = 1 << 16;
/// Code heaps in one code cache (HotSpot has 1 or 3).
pub const CODE_HEAPS_MAX: usize = 8;
/// The template interpreter's code (~250 KiB).
pub const INTERPRETER_MAX_BYTES: u64 = 64 << 20;
/// Segment-map hops back to a block's start: a hop is at most 254 segments, so this covers
/// blobs of 4096 × 254 × 64 B ≈ 64 MiB at the default segment size (the eBPF walker uses the
/// same bound).
pub const SEGMAP_MAX_HOPS: u32 = 4096;
/// A Java class or method name (longer ones are cut and marked).
pub const JAVA_NAME_MAX: usize = 512;
/// A CodeBlob's name (`"nmethod"`, `"Interpreter"`, stub names).
pub const CODE_BLOB_NAME_MAX: usize = 256;
/// Entries of one ELF relocation section (libjvm's `.rela.dyn` has 100 000–125 000; 24
/// bytes each), checked from the section header before it is read.
pub const ELF_MAX_RELOCS: usize = 1_000_000;
/// A method's compressed line number table (one to six bytes per line of a method of at
/// most 65 535 bytecodes).
pub const LINE_TABLE_MAX_BYTES: usize = 256 << 10;
/// Scopes of one compiled frame (the method and the ones inlined into it): C2's and C1's
/// `MaxInlineLevel` is 15 (9 before JDK 14), and recursive inlining adds little.
pub const SCOPES_MAX_DEPTH: usize = 64;
/// PcDescs listed from one nmethod (16 bytes each): a large C2 nmethod has a few thousand.
pub const SCOPES_MAX_PC_DESCS: usize = 1 << 18;
/// One section of an nmethod read for its scopes (PcDescs, scopes data, metadata): checked
/// before any address in it is computed (real ones are KiBs, at most a few MiB).
pub const NMETHOD_SECTION_MAX_BYTES: u64 = 64 << 20;
