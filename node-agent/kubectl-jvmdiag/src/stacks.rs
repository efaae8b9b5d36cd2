//! `kubectl jvmdiag stacks -n NS deploy/NAME`: the culprit stacks of a workload's pods.
//!
//! Each pod's node agent serves `GET /stacks` (collapsed flame-graph lines,
//! `kind;namespace/pod;root;…;leaf count`); it is read through the API server's pod proxy, as
//! `top` reads `/metrics`, with the user's RBAC (`get pods/proxy` in the agent's namespace). The
//! lines of the workload's pods are kept, equal lines summed, and printed by count, highest first:
//! the output pipes into flamegraph.pl. The agent's answer is untrusted input: lines are bounded,
//! checked and skipped (counted) when malformed.
use std::collections::{BTreeMap, BTreeSet};

use kube::Client;

use crate::top::{self, Kind, Source};

/// `kind` values the agent takes stacks for (its `/stacks?kind=`).
pub const KINDS: [&str; 5] =
    ["thread_start", "vm_operation", "monitor_wait", "monitor_hold", "park"];
/// The longest line kept: 48 frames of long names fit; a longer one is not the agent's.
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// The most distinct lines kept from all agents together.
pub const MAX_LINES: usize = 200_000;

pub struct StacksArgs {
    pub namespace: String,
    pub kind: Kind,
    pub name: String,
    pub stack_kind: Option<String>,
    pub pod: Option<String>,
    pub top: Option<usize>,
    pub merge_pods: bool,
    pub agent_namespace: Option<String>,
}

/// One parsed line: `kind;namespace/pod;frames… count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: String,
    pub namespace: String,
    pub pod: String,
    /// Root first, `;`-separated; empty when the agent named no frame.
    pub frames: String,
    pub count: u64,
}

/// Parses one line of `/stacks`; None when it is not of the agent's shape (too long, no count,
/// a count that is not a number, an unknown kind, no `namespace/pod`, control characters).
pub fn parse_line(line: &str) -> Option<Line> {
    if line.len() > MAX_LINE_BYTES || line.chars().any(|c| c.is_control()) {
        return None;
    }
    let (stack, count) = line.rsplit_once(' ')?;
    // Digits only: u64's parser also takes a leading '+'.
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let count: u64 = count.parse().ok()?;
    let mut parts = stack.splitn(3, ';');
    let kind = parts.next()?;
    if !KINDS.contains(&kind) {
        return None;
    }
    let (namespace, pod) = parts.next()?.split_once('/')?;
    if namespace.is_empty() || pod.is_empty() || pod.contains('/') {
        return None;
    }
    let frames = parts.next().unwrap_or("");
    if frames.split(';').any(str::is_empty) && !frames.is_empty() {
        return None;
    }
    Some(Line {
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        pod: pod.to_string(),
        frames: frames.to_string(),
        count,
    })
}

/// The lines of several answers, equal stacks summed (saturating). `merge_pods`: without the
/// `namespace/pod` frame, so the workload's pods add up into one flame graph.
#[derive(Debug, Default)]
pub struct Merged {
    lines: BTreeMap<String, u64>,
    /// Lines not of the agent's shape.
    pub skipped: usize,
    /// Lines dropped past [`MAX_LINES`].
    pub dropped: usize,
}

impl Merged {
    /// Adds an agent's answer, keeping the lines of `pods` in `namespace` (and `kind` when set).
    pub fn add(
        &mut self,
        body: &str,
        namespace: &str,
        pods: &BTreeSet<String>,
        kind: Option<&str>,
        merge_pods: bool,
    ) {
        for raw in body.lines().filter(|l| !l.is_empty()) {
            let Some(l) = parse_line(raw) else {
                self.skipped += 1;
                continue;
            };
            if l.namespace != namespace
                || !pods.contains(&l.pod)
                || kind.is_some_and(|k| k != l.kind)
            {
                continue;
            }
            let mut key = l.kind.clone();
            if !merge_pods {
                key.push(';');
                key.push_str(&l.namespace);
                key.push('/');
                key.push_str(&l.pod);
            }
            if !l.frames.is_empty() {
                key.push(';');
                key.push_str(&l.frames);
            }
            let full = self.lines.len() >= MAX_LINES;
            match self.lines.get_mut(&key) {
                Some(n) => *n = n.saturating_add(l.count),
                None if full => self.dropped += 1,
                None => {
                    self.lines.insert(key, l.count);
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Total samples.
    pub fn samples(&self) -> u64 {
        self.lines.values().fold(0u64, |a, n| a.saturating_add(*n))
    }

    /// The collapsed lines by count (highest first, then by text), the first `top` of them.
    pub fn render(&self, top: Option<usize>) -> String {
        let mut v: Vec<(&String, &u64)> = self.lines.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let mut out = String::new();
        for (line, n) in v.into_iter().take(top.unwrap_or(usize::MAX)) {
            out.push_str(line);
            out.push(' ');
            out.push_str(&n.to_string());
            out.push('\n');
        }
        out
    }
}

/// Percent-encodes a query value (names are DNS labels; anything else is escaped).
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The path and query of one agent's `/stacks` for the namespace (and pod, kind).
pub fn query(namespace: &str, pod: Option<&str>, kind: Option<&str>) -> String {
    let mut q = format!("stacks?namespace={}", enc(namespace));
    if let Some(p) = pod {
        q.push_str(&format!("&pod={}", enc(p)));
    }
    if let Some(k) = kind {
        q.push_str(&format!("&kind={}", enc(k)));
    }
    q
}

pub async fn run(client: &Client, a: &StacksArgs) -> anyhow::Result<String> {
    let (resource, mut pods) = top::workload_pods(client, &a.namespace, a.kind, &a.name).await?;
    let name_of = |p: &k8s_openapi::api::core::v1::Pod| p.metadata.name.clone().unwrap_or_default();
    let node_of = |p: &k8s_openapi::api::core::v1::Pod| {
        p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default()
    };
    if let Some(want) = &a.pod {
        let names: Vec<String> = pods.iter().map(name_of).collect();
        pods.retain(|p| name_of(p) == *want);
        if pods.is_empty() {
            anyhow::bail!(
                "--pod {want}: not a running pod of {}/{} in namespace {} (its pods: {})",
                a.kind.name().to_ascii_lowercase(),
                a.name,
                a.namespace,
                names.join(", ")
            );
        }
    }
    let mut errors = Vec::new();
    let mut sources: BTreeMap<Source, BTreeSet<String>> = BTreeMap::new();
    let mut agents = None;
    for p in &pods {
        // Stacks are taken in eBPF by the node agent; the sidecar has none to serve.
        if top::has_sidecar(p) {
            errors.push(format!(
                "{}: collection: Sidecar has no culprit stacks (they are taken in eBPF by the node agent: collection: NodeAgent)",
                name_of(p)
            ));
            continue;
        }
        if agents.is_none() {
            agents = Some(top::find_agents(client, a.agent_namespace.as_deref()).await?);
        }
        match agents.as_ref().expect("just found").of(&name_of(p), &node_of(p)) {
            Ok(src) => {
                sources.entry(src).or_default().insert(name_of(p));
            }
            Err(e) => errors.push(e),
        }
    }
    if sources.is_empty() {
        anyhow::bail!("{}", errors.join("\n"));
    }
    eprintln!(
        "reading /stacks of {} agent(s) for {} pod(s) of JvmDiagnostics {resource}…",
        sources.len(),
        sources.values().map(BTreeSet::len).sum::<usize>()
    );
    let mut merged = Merged::default();
    let mut set = tokio::task::JoinSet::new();
    for (src, names) in &sources {
        let (client, src, names) = (client.clone(), src.clone(), names.clone());
        // One pod: the agent filters; else the namespace's lines, kept by pod here.
        let pod = if names.len() == 1 { names.iter().next().cloned() } else { None };
        let path = query(&a.namespace, pod.as_deref(), a.stack_kind.as_deref());
        set.spawn(async move {
            let r = top::fetch(&client, &src, &path, "text/plain", &[400, 404]).await;
            (src, names, r)
        });
    }
    let mut failures = Vec::new();
    let mut answered = 0;
    while let Some(j) = set.join_next().await {
        let (src, names, r) = j.map_err(|e| anyhow::anyhow!("a /stacks request failed: {e}"))?;
        match r {
            Ok((200, body)) => {
                answered += 1;
                merged.add(&body, &a.namespace, &names, a.stack_kind.as_deref(), a.merge_pods);
            }
            Ok((404, _)) => failures.push(format!(
                "the {} does not serve /stacks (HTTP 404): it predates culprit stacks; upgrade the chart's agent image",
                src.describe()
            )),
            Ok((code, body)) => failures.push(format!(
                "the {} refused the query (HTTP {code}): {}",
                src.describe(),
                crate::table::cell(body.trim(), 300)
            )),
            // Not allowed: the same for every agent, say it once.
            Err(e) if crate::cluster::is_code(&e, 403) => return Err(e),
            // Prometheus has no stacks: the way around the proxy is a token of one's own.
            Err(e) if e.to_string().contains("requires a token") => anyhow::bail!(
                "the {} requires a token (agent.metricsAuth is on) and the API server's pod proxy does not forward yours: \
                 read its /stacks with a token directly, e.g. kubectl -n {} port-forward pod/{} {port} and \
                 curl -H \"Authorization: Bearer $(kubectl create token SA)\" 'http://127.0.0.1:{port}/{path}' \
                 (SA: a ServiceAccount allowed to get the non-resource URL /metrics), see docs/kubectl-plugin.md#when-the-agent-requires-a-token",
                src.describe(),
                src.namespace,
                src.pod,
                port = src.port,
                path = query(&a.namespace, None, a.stack_kind.as_deref()),
            ),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if answered == 0 {
        failures.extend(errors);
        anyhow::bail!("{}", failures.join("\n"));
    }
    for f in failures.iter().chain(errors.iter()) {
        eprintln!("warning: {f}");
    }
    if merged.skipped > 0 {
        eprintln!(
            "note: {} line(s) of the agents' answers were malformed or too long and skipped",
            merged.skipped
        );
    }
    if merged.dropped > 0 {
        eprintln!("note: {} distinct stack(s) past {MAX_LINES} dropped", merged.dropped);
    }
    if merged.is_empty() {
        eprintln!(
            "no culprit stacks for these pods yet: park is taken at every LockSupport.park, vm_operation at \
             requested VM operations (e.g. System.gc()), monitor_wait/monitor_hold with collectors.monitors.enabled, \
             thread_start only while the starter probe's window is open"
        );
    } else {
        eprintln!("{} sample(s) since the JVMs were traced", merged.samples());
    }
    Ok(merged.render(a.top))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_line_of_the_agent_parses() {
        let l = parse_line(
            "park;shop/web-1;java.lang.Thread.run;shop.Pool.take;jdk.internal.misc.Unsafe.park 42",
        )
        .unwrap();
        assert_eq!(l.kind, "park");
        assert_eq!((l.namespace.as_str(), l.pod.as_str()), ("shop", "web-1"));
        assert_eq!(l.frames, "java.lang.Thread.run;shop.Pool.take;jdk.internal.misc.Unsafe.park");
        assert_eq!(l.count, 42);
        let l = parse_line("vm_operation;shop/web-1;…truncated;a.B.c 3").unwrap();
        assert_eq!(l.frames, "…truncated;a.B.c");
        let l = parse_line("park;shop/web-1 7").unwrap();
        assert_eq!((l.frames.as_str(), l.count), ("", 7));
    }

    #[test]
    fn forged_lines_are_refused() {
        for bad in [
            "",
            "park;shop/web-1;a.B.c",                      // no count
            "park;shop/web-1;a.B.c x",                    // count not a number
            "park;shop/web-1;a.B.c -1",                   // negative
            "park;shop/web-1;a.B.c +1",                   // sign
            "park;shop/web-1;a.B.c 1.5",                  // not an integer
            "park;shop/web-1;a.B.c 99999999999999999999", // past u64
            "gc;shop/web-1;a.B.c 1",                      // unknown kind
            "park;web-1;a.B.c 1",                         // no namespace
            "park;shop/a/b;a.B.c 1",                      // not a pod name
            "park;/web-1;a.B.c 1",
            "park;shop/web-1;a.B.c\u{1b}[2J 1", // terminal escape
            "park;shop/web-1;a.B.c\r 1",
            "park;shop/web-1;;a.B.c 1", // empty frame
        ] {
            assert_eq!(parse_line(bad), None, "{bad:?}");
        }
        let long = format!("park;shop/web-1;{} 1", "a.B.c;".repeat(MAX_LINE_BYTES / 6) + "x.Y.z");
        assert!(long.len() > MAX_LINE_BYTES);
        assert_eq!(parse_line(&long), None);
    }

    #[test]
    fn the_pods_lines_are_merged_and_sorted_by_count() {
        let agent1 = "park;shop/web-1;T.run;A.wait 5\n\
                      park;shop/web-1;T.run;A.wait 2\n\
                      park;shop/other-9;T.run;X.x 100\n\
                      park;bank/web-1;T.run;A.wait 100\n\
                      vm_operation;shop/web-1;T.run;G.gc 7\n";
        let agent2 = "park;shop/web-2;T.run;A.wait 4\n\
                      park;shop/web-2;T.run;B.wait 9\n\
                      not a line\n\
                      park;shop/web-2;T.run;B.wait 18446744073709551615\n";
        let mut m = Merged::default();
        let p = pods(&["web-1", "web-2"]);
        m.add(agent1, "shop", &p, None, false);
        m.add(agent2, "shop", &p, None, false);
        assert_eq!(m.skipped, 1);
        assert_eq!(
            m.render(None),
            "park;shop/web-2;T.run;B.wait 18446744073709551615\n\
             park;shop/web-1;T.run;A.wait 7\n\
             vm_operation;shop/web-1;T.run;G.gc 7\n\
             park;shop/web-2;T.run;A.wait 4\n",
            "equal lines summed (saturating), ties by text, other pods and namespaces left out"
        );
        assert_eq!(m.render(Some(1)).lines().count(), 1);

        let mut m = Merged::default();
        m.add(agent1, "shop", &p, Some("park"), true);
        m.add(agent2, "shop", &p, Some("park"), true);
        assert_eq!(
            m.render(None),
            "park;T.run;B.wait 18446744073709551615\npark;T.run;A.wait 11\n"
        );
    }

    #[test]
    fn the_query_is_encoded() {
        assert_eq!(query("shop", None, None), "stacks?namespace=shop");
        assert_eq!(
            query("shop", Some("web-1"), Some("park")),
            "stacks?namespace=shop&pod=web-1&kind=park"
        );
        assert_eq!(query("a&b=c", None, None), "stacks?namespace=a%26b%3Dc");
    }
}
