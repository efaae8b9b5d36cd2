//! HotSpot's functions and VM operation classes by name in a libjvm.so's `.symtab`: the
//! symbols uprobe mode attaches to, and the names of VM operations seen by their vtable.
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use jvmdiag_inspect::elf;

/// The `.symtab` symbols of a libjvm.so (a /proc/self/fd path) that `wanted` selects.
/// Reads the symbol and string tables only (4–5 MB of a 24–30 MB libjvm.so), not the file.
pub fn read_symbols(binary: &Path, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<elf::Symbol>> {
    let f = std::fs::File::open(binary)?;
    Ok(elf::symbols_in_file(&f, wanted)?.into_iter().filter(|s| s.from_symtab).collect())
}

/// The function named exactly `name` in `syms`.
pub fn function<'a>(syms: &'a [elf::Symbol], name: &str) -> Option<&'a elf::Symbol> {
    syms.iter().find(|s| s.kind == 2 && s.name == name && s.size > 0)
}

/// `VMThread::evaluate_operation(VM_Operation*)`: where HotSpot fires vmops__begin/end.
pub const SYM_EVALUATE: &str = "_ZN8VMThread18evaluate_operationEP12VM_Operation";
pub const SYM_SP_BEGIN: &str = "_ZN20SafepointSynchronize5beginEv";
pub const SYM_SP_END: &str = "_ZN20SafepointSynchronize3endEv";

/// VM operation names by vtable, per libjvm.so file, for uprobe mode (no USDT notes).
///
/// HotSpot's operation names (`VM_Operation::name()`, what vmops__begin reports) are the
/// `VM_OPS_DO` entries, and every operation class is `VM_<entry>` (`VM_ThreadDump` →
/// `ThreadDump`, `VM_G1CollectFull` → `G1CollectFull`): the class of the vtable a
/// `VM_Operation*` points to, without `VM_`, is the name.
#[derive(Default)]
pub struct VtableNames {
    files: RefCell<Vec<HashMap<u64, String>>>,
}

impl VtableNames {
    /// Indexes the vtables of one file; returns the file's index (the cookie's high half)
    /// and the file's function `func` (one read of the ELF for both).
    pub fn register(&self, binary: &Path, func: &str) -> Result<(u32, Option<elf::Symbol>)> {
        let syms = read_symbols(binary, &|n: &str| n.starts_with("_ZTV") || n == func)?;
        let f = function(&syms, func).cloned();
        // A vtable pointer points past the offset-to-top and RTTI words.
        let table: HashMap<u64, String> = syms
            .iter()
            .filter(|s| s.kind == 1)
            .filter_map(|s| Some((s.value + 16, vm_operation_name(&s.name)?)))
            .collect();
        let mut files = self.files.borrow_mut();
        if let Some(i) = files.iter().position(|t| *t == table) {
            return Ok((i as u32, f));
        }
        files.push(table);
        Ok((files.len() as u32 - 1, f))
    }

    pub fn resolve(&self, file: u32, rel: u64) -> String {
        self.files
            .borrow()
            .get(file as usize)
            .and_then(|t| t.get(&rel).cloned())
            .unwrap_or_else(|| "unknown".into())
    }
}

/// `_ZTV13VM_ThreadDump` → `ThreadDump`; only plain (non-nested) classes named `VM_*`.
fn vm_operation_name(mangled: &str) -> Option<String> {
    let rest = mangled.strip_prefix("_ZTV")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = rest[..digits].parse().ok()?;
    let class = rest.get(digits..digits + len)?;
    if digits + len != rest.len() {
        return None;
    }
    let name = class.strip_prefix("VM_")?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The cookie of a probe on `sym` that names operations by vtable: file index (high 32
/// bits), the function's address in the file (low 32 bits).
pub fn vtable_cookie(file: u32, sym: &elf::Symbol) -> Result<u64> {
    anyhow::ensure!(
        sym.value <= u64::from(u32::MAX),
        "{} at {:#x}: beyond 4 GiB",
        sym.name,
        sym.value
    );
    Ok(u64::from(file) << 32 | sym.value)
}

#[cfg(test)]
mod tests {
    use super::vm_operation_name;

    #[test]
    fn vtable_symbols_name_operations_like_hotspot() {
        assert_eq!(vm_operation_name("_ZTV13VM_ThreadDump").as_deref(), Some("ThreadDump"));
        assert_eq!(vm_operation_name("_ZTV16VM_G1CollectFull").as_deref(), Some("G1CollectFull"));
        assert_eq!(vm_operation_name("_ZTV12VM_Operation").as_deref(), Some("Operation"));
        assert_eq!(vm_operation_name("_ZTV8VMThread"), None);
        assert_eq!(vm_operation_name("_ZTVN5Outer8VM_InnerE"), None);
        assert_eq!(vm_operation_name("_ZTV99VM_x"), None);
    }
}
