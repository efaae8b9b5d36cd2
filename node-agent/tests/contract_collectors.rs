//! The collector names of the CRD and of the agent are one list: every property of the
//! generated CRD's `spec.collectors` (crds/, generated from the operator's Java model) is a
//! collector the agent registers under that annotation name (`Registration::annotation`), and
//! every registered collector is a property there. A name only one side knows is a collector
//! a resource can ask for and never get, or one no resource can turn off. No cluster, no
//! privileges.
use std::collections::BTreeSet;
use std::path::PathBuf;

use jvmdiag_agent::collector::REGISTRY;
use serde_json::Value;

/// The CRD as `make operator-crd` writes it (the chart's crds/ holds a copy of it).
const CRD: &str = "crds/jvmdiagnostics.jvm.diagnostics.dev-v1.yml";

/// `spec.collectors`'s property names of each version of the CRD, by version name.
fn crd_collectors() -> Vec<(String, BTreeSet<String>)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(CRD);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{CRD}: {e}"));
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{CRD}: no spec.versions"));
    assert!(!versions.is_empty(), "{CRD}: spec.versions is empty");
    versions
        .iter()
        .map(|v| {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
            let props = v
                .pointer("/schema/openAPIV3Schema/properties/spec/properties/collectors/properties")
                .and_then(Value::as_object)
                .unwrap_or_else(|| {
                    panic!("{CRD}: version {name} has no spec.collectors.properties")
                });
            (name, props.keys().cloned().collect())
        })
        .collect()
}

#[test]
fn the_crds_collectors_are_the_agents_collectors() {
    let agent: BTreeSet<String> = REGISTRY.iter().map(|r| r.annotation.to_string()).collect();
    assert_eq!(agent.len(), REGISTRY.len(), "two collectors share an annotation name");
    for (version, crd) in crd_collectors() {
        let missing: Vec<&String> = agent.difference(&crd).collect();
        let extra: Vec<&String> = crd.difference(&agent).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{CRD} (version {version}) spec.collectors and the agent's REGISTRY differ:\n  \
             registered in the agent, not in the CRD: {missing:?}\n  \
             in the CRD, not registered in the agent: {extra:?}\n\
             A collector is added on both sides (docs/development.md, \"Adding a collector\")."
        );
    }
}
