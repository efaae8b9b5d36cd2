//! The pod watch: kube-rs's watcher (list + watch, re-list after a lost watch, backoff) on
//! a thread with a single-threaded tokio runtime, folding events into the shared table;
//! beside it, a watch of the JvmDiagnostics resources' names (metadata only).
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::kube::api::ListParams;
use ::kube::config::Kubeconfig;
use ::kube::core::{ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta};
use ::kube::runtime::watcher::{self, Event};
use ::kube::runtime::WatchStreamExt;
use ::kube::{Api, Client};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;

use super::table::PodMeta;
use super::Shared;
use crate::preflight::Fatal;

const PROBE_EVERY: Duration = Duration::from_secs(3);

/// Starts the watch thread. Fails only on a kubeconfig that cannot be read (a flag error);
/// an unreachable API server is retried forever.
pub fn spawn(
    node: String,
    kubeconfig: Option<PathBuf>,
    shared: Arc<Mutex<Shared>>,
) -> Result<(), Fatal> {
    let kc = super::read_kubeconfig(kubeconfig.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fatal(format!("cannot start the pod watch's runtime: {e}")))?;
    std::thread::Builder::new()
        .name("pod-watch".into())
        .spawn(move || rt.block_on(run(node, kc, shared)))
        .map_err(|e| Fatal(format!("cannot start the pod watch thread: {e}")))?;
    Ok(())
}

fn note_error(shared: &Mutex<Shared>, msg: String, last_log: &mut Option<Instant>) {
    let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
    sh.api_up = false;
    sh.watch_errors += 1;
    // One line per 30 s at most: an API server that is down should not flood the log.
    if last_log.is_none_or(|t: Instant| t.elapsed() > Duration::from_secs(30)) {
        tracing::warn!(
            "pod watch: {msg} (tracing goes on with the {} pods known)",
            sh.table.pod_count()
        );
        *last_log = Some(Instant::now());
    }
    sh.last_error = msg;
}

/// After an error the watcher resumes from its last resourceVersion and a quiet node sends
/// no event, so reachability cannot be read from the stream alone: while the watch is
/// down, a one-item list of this node's pods every few seconds says when it is back.
async fn probe(api: Api<Pod>, fields: String, shared: Arc<Mutex<Shared>>) {
    let lp = ListParams::default().fields(&fields).limit(1);
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let down = {
            let sh = shared.lock().unwrap_or_else(|e| e.into_inner());
            sh.synced && !sh.api_up
        };
        if down && api.list_metadata(&lp).await.is_ok() {
            shared.lock().unwrap_or_else(|e| e.into_inner()).api_up = true;
        }
    }
}

/// The JvmDiagnostics resources, by (namespace, name): which pods may be traced.
async fn resources(client: Client, shared: Arc<Mutex<Shared>>) {
    let gvk = GroupVersionKind::gvk("jvm.diagnostics.dev", "v1alpha1", "JvmDiagnostics");
    // Metadata only: names are all it needs.
    let api: Api<PartialObjectMeta<DynamicObject>> =
        Api::all_with(client, &ApiResource::from_gvk_with_plural(&gvk, "jvmdiagnostics"));
    let mut stream = watcher::watcher(api, watcher::Config::default()).default_backoff().boxed();
    let mut last_log = None;
    let mut listing: Option<std::collections::HashSet<(String, String)>> = None;
    let key = |m: &::kube::core::ObjectMeta| Some((m.namespace.clone()?, m.name.clone()?));
    while let Some(ev) = stream.next().await {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                note_error(&shared, format!("JvmDiagnostics watch: {e}"), &mut last_log);
                continue;
            }
        };
        let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
        match ev {
            Event::Init => listing = Some(Default::default()),
            Event::InitApply(r) => {
                if let (Some(l), Some(k)) = (listing.as_mut(), key(&r.metadata)) {
                    l.insert(k);
                }
            }
            Event::InitDone => {
                sh.resources = listing.take().unwrap_or_default();
                sh.resources_synced = true;
            }
            Event::Apply(r) => {
                if let Some(k) = key(&r.metadata) {
                    sh.resources.insert(k);
                }
            }
            Event::Delete(r) => {
                if let Some(k) = key(&r.metadata) {
                    sh.resources.remove(&k);
                }
            }
        }
    }
}

async fn run(node: String, kc: Option<Kubeconfig>, shared: Arc<Mutex<Shared>>) {
    let mut last_log = None;
    let client = loop {
        match super::client(kc.as_ref()).await {
            Ok(c) => break c,
            Err(e) => {
                note_error(&shared, format!("no API client: {e}"), &mut last_log);
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    };
    tokio::spawn(resources(client.clone(), shared.clone()));
    let api: Api<Pod> = Api::all(client);
    let fields = format!("spec.nodeName={node}");
    tokio::spawn(probe(api.clone(), fields.clone(), shared.clone()));
    let cfg = watcher::Config::default().fields(&fields);
    let mut stream = watcher::watcher(api, cfg).default_backoff().boxed();
    let mut listing: Option<Vec<PodMeta>> = None;
    while let Some(ev) = stream.next().await {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                note_error(&shared, e.to_string(), &mut last_log);
                continue;
            }
        };
        let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
        sh.watch_events += 1;
        match ev {
            Event::Init => listing = Some(Vec::new()),
            Event::InitApply(p) => {
                if let (Some(l), Some(m)) = (listing.as_mut(), PodMeta::from_pod(&p)) {
                    l.push(m);
                }
            }
            Event::InitDone => {
                sh.table.replace(listing.take().unwrap_or_default());
                sh.synced = true;
                sh.api_up = true;
            }
            Event::Apply(p) => {
                if let Some(m) = PodMeta::from_pod(&p) {
                    sh.table.apply(m);
                }
                sh.api_up = true;
            }
            Event::Delete(p) => {
                if let Some(uid) = p.metadata.uid.as_deref() {
                    sh.table.remove(uid);
                }
                sh.api_up = true;
            }
        }
    }
}
