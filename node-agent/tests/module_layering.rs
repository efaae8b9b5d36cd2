//! The agent's top-level modules (`src/<name>.rs`, `src/<name>/`) depend on each other one way
//! only: no cycle of `crate::` paths among them, test code aside. A cycle is how a "pure"
//! module starts to need the I/O around it (metrics needing the model and the model the
//! catalog); this keeps the layering that docs/agent.md describes true.
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// `crate::<module>` paths used by each top-level module, outside `#[cfg(test)]` code.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read src/") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src/");
            let first = rel.components().next().expect("a component");
            let top = first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            let text = fs::read_to_string(&path).expect("read a source file");
            // Test modules come last in a file; what follows `#[cfg(test)]` is test code.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    out.entry(top.clone()).or_default().insert(name);
                }
            }
        }
    }
    out
}

/// A path from `from` back to itself, if there is one.
fn cycle_through(g: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    while let Some((node, path)) = stack.pop() {
        for next in g.get(&node).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(from.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = edges(&src);
    assert!(g.contains_key("attach") && g["attach"].contains("collector"), "the scan finds edges");
    let cycles: Vec<String> =
        g.keys().filter_map(|m| cycle_through(&g, m)).map(|c| c.join(" -> ")).collect();
    assert!(cycles.is_empty(), "import cycles between src/ modules:\n{}", cycles.join("\n"));
}
