//! The API server as the user reaches it (kubeconfig, context, impersonation), and errors that
//! name their fix: a 403 says which verb on which resource in which namespace to grant.
use std::fmt;

use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// The user's connection options, as kubectl's global flags give them.
#[derive(Debug, Clone, Default)]
pub struct Conn {
    pub kubeconfig: Option<String>,
    pub context: Option<String>,
    pub as_user: Option<String>,
    pub as_groups: Vec<String>,
    pub request_timeout: Option<std::time::Duration>,
}

pub async fn client(c: &Conn) -> anyhow::Result<(Client, String)> {
    let opts = KubeConfigOptions { context: c.context.clone(), ..Default::default() };
    let mut config = match &c.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| anyhow::anyhow!("cannot read --kubeconfig {path}: {e}"))?;
            Config::from_custom_kubeconfig(kc, &opts).await?
        }
        None => Config::from_kubeconfig(&opts).await.or_else(|e| {
            // no kubeconfig: in a pod, its ServiceAccount (as kubectl does)
            Config::incluster().map_err(|_| {
                anyhow::anyhow!("no usable kubeconfig ($KUBECONFIG or ~/.kube/config): {e}")
            })
        })?,
    };
    if let Some(u) = &c.as_user {
        config.auth_info.impersonate = Some(u.clone());
    }
    if !c.as_groups.is_empty() {
        config.auth_info.impersonate_groups = Some(c.as_groups.clone());
    }
    if let Some(t) = c.request_timeout {
        config.read_timeout = Some(t);
        config.connect_timeout = Some(t);
    }
    let ns = config.default_namespace.clone();
    Ok((Client::try_from(config)?, ns))
}

/// What a request was, for its error message: `list` `pods` in `shop`.
#[derive(Debug, Clone)]
pub struct Req {
    pub verb: &'static str,
    pub resource: String,
    pub namespace: Option<String>,
}

impl Req {
    pub fn new(verb: &'static str, resource: &str, namespace: Option<&str>) -> Req {
        Req { verb, resource: resource.to_string(), namespace: namespace.map(str::to_string) }
    }
    fn scope(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "cluster-wide".to_string(),
        }
    }
}

/// A failed API request, kept apart from other errors: callers react to 403 and 404.
#[derive(Debug)]
pub struct ApiError {
    pub req: Req,
    pub code: u16,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            403 => write!(
                f,
                "not allowed: {verb} {res} {scope} ({msg}).\n  Ask for a Role with verbs [{verb}] on {res} {scope} \
                 (docs/kubectl-plugin.md#rbac), or check with: kubectl auth can-i {verb} {res}{ns}",
                verb = self.req.verb,
                res = self.req.resource,
                scope = self.req.scope(),
                msg = self.message,
                ns = self.req.namespace.as_ref().map(|n| format!(" -n {n}")).unwrap_or_else(|| " -A".into()),
            ),
            401 => write!(f, "the API server did not accept your credentials (401): {}", self.message),
            _ => write!(
                f,
                "{} {} {} failed (HTTP {}): {}",
                self.req.verb,
                self.req.resource,
                self.req.scope(),
                self.code,
                self.message
            ),
        }
    }
}

impl std::error::Error for ApiError {}

/// Maps a kube error to [`ApiError`] (API answers) or keeps it (transport, decoding).
pub fn api_err(req: Req, e: kube::Error) -> anyhow::Error {
    match e {
        kube::Error::Api(s) => ApiError { req, code: s.code, message: s.message.clone() }.into(),
        other => anyhow::anyhow!("{} {} {}: {other}", req.verb, req.resource, req.scope()),
    }
}

pub fn is_code(e: &anyhow::Error, code: u16) -> bool {
    e.downcast_ref::<ApiError>().map(|a| a.code == code).unwrap_or(false)
}

/// A GET through the API server (a pod's proxy, a raw path), its body read up to `max_bytes`.
/// Returns the HTTP status and the body; a body beyond the cap is an error.
pub async fn get_raw(
    client: &Client,
    path: &str,
    accept: &str,
    max_bytes: usize,
) -> anyhow::Result<(u16, String)> {
    let req = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .map_err(|e| anyhow::anyhow!("bad request path {path}: {e}"))?;
    let res = client.send(req).await.map_err(|e| anyhow::anyhow!("GET {path}: {e}"))?;
    let status = res.status().as_u16();
    let mut body = res.into_body();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| anyhow::anyhow!("GET {path}: reading the answer: {e}"))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max_bytes {
                anyhow::bail!(
                    "GET {path}: the answer is larger than {} MiB: refused",
                    max_bytes >> 20
                );
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok((status, String::from_utf8_lossy(&buf).into_owned()))
}

/// The message of an API server `Status` body, else the body itself (cut).
pub fn status_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
        .unwrap_or_else(|| crate::table::cell(body.trim(), 300))
}

/// Whether a body is an API server `Status` (the API server answered) rather than the proxied
/// backend's own answer.
pub fn is_status(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .map(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_names_the_verb_resource_and_namespace_to_grant() {
        let e = ApiError {
            req: Req::new("get", "pods/proxy", Some("jvm-diagnostics")),
            code: 403,
            message: "pods \"a\" is forbidden".into(),
        };
        let s = e.to_string();
        assert!(s.contains("not allowed: get pods/proxy in namespace jvm-diagnostics"), "{s}");
        assert!(s.contains("kubectl auth can-i get pods/proxy -n jvm-diagnostics"), "{s}");
        let e =
            ApiError { req: Req::new("list", "daemonsets", None), code: 403, message: "x".into() };
        assert!(e.to_string().contains("kubectl auth can-i list daemonsets -A"));
    }

    #[test]
    fn a_status_body_is_told_from_a_backend_body() {
        let st = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" not found","code":404}"#;
        assert!(is_status(st));
        assert_eq!(status_message(st), "pods \"x\" not found");
        assert!(!is_status("unauthorized: send a bearer token the Kubernetes API authenticates"));
        assert_eq!(status_message("plain\n"), "plain");
    }
}
