//! Authorization of `/metrics` (`--metrics-auth kubernetes`), the way cluster scrapers expect
//! it from kube-rbac-proxy and the kubelet's own `/metrics`: a request carries
//! `Authorization: Bearer TOKEN`; a TokenReview says whose token it is, then a
//! SubjectAccessReview whether that user may `get` the non-resource URL `/metrics`.
//!
//! Answers: no token, a malformed one, or one the API does not authenticate: 401; a user not
//! allowed: 403; the API unreachable, failing or silent for [`REVIEW_TIMEOUT`]: 503, not
//! cached (the next scrape asks again); a peer address with [`REVIEWS_PER_PEER`] reviews in
//! flight already: 429. Verdicts are cached by the SHA-256 of the token, never the token (which
//! is never logged either): allowed for [`ALLOWED_TTL`], denied for [`DENIED_TTL`], at most
//! [`CACHE_ENTRIES`] of them, denials evicted first. So a Prometheus scraping every 15 s costs
//! the API server two reviews a minute, and a pod sending made-up tokens as fast as it can
//! keeps at most [`REVIEWS_PER_PEER`] reviews in flight and cannot push the allowed scrapers
//! out of the cache.
//!
//! The reviews are async API calls on the HTTP thread's runtime, never on the collection loop.
//! The objects sent are built, and the answers read, by pure functions ([`token_review`],
//! [`reviewed_user`], [`access_review`], [`access_allowed`]), tested below with the header
//! parsing ([`bearer_token`]) and the cache ([`Cache`]).
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ::kube::api::{Api, PostParams};
use ::kube::config::Kubeconfig;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};

use crate::cli::{Config, MetricsAuth};
use crate::preflight::Fatal;
use crate::slots::Slots;

/// How long an allowed token is believed without asking again.
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a token that was refused (401 or 403) is refused without asking again.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// Verdicts kept at most.
pub const CACHE_ENTRIES: usize = 1024;
/// Both reviews of one request must be answered within this, else 503.
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(5);
/// Reviews in flight at once for one peer address; more are answered 429.
pub const REVIEWS_PER_PEER: usize = 2;
/// A longer `Authorization` value is refused unread (service account tokens are ~1 KiB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The request a scraper must be allowed, as kube-rbac-proxy and the kubelet ask it.
pub const PATH: &str = "/metrics";
pub const VERB: &str = "get";

/// What the API said about a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// 401: the TokenReview did not authenticate it.
    Unauthenticated,
    /// 403: authenticated, but the SubjectAccessReview did not allow `get /metrics`.
    Forbidden,
}

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    /// 401: no bearer token, a malformed one, or one the API does not authenticate.
    Unauthenticated,
    /// 403.
    Forbidden,
    /// 429: this peer has [`REVIEWS_PER_PEER`] reviews in flight.
    Busy,
    /// 503: the API could not say.
    Unavailable,
}

impl From<Verdict> for Outcome {
    fn from(v: Verdict) -> Outcome {
        match v {
            Verdict::Allowed => Outcome::Allowed,
            Verdict::Unauthenticated => Outcome::Unauthenticated,
            Verdict::Forbidden => Outcome::Forbidden,
        }
    }
}

/// The token of the request's `Authorization` values: exactly one value, `Bearer` (any case),
/// spaces, then a token68 (RFC 6750: letters, digits, `-._~+/`, trailing `=`) of at most
/// [`MAX_TOKEN_BYTES`]. None otherwise (two headers are ambiguous, and refused).
pub fn bearer_token<'a>(mut values: impl Iterator<Item = &'a [u8]>) -> Option<&'a str> {
    let v = values.next()?;
    if values.next().is_some() || v.len() > MAX_TOKEN_BYTES + 64 {
        return None;
    }
    let v = std::str::from_utf8(v).ok()?.trim_matches(' ');
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    let body = token.trim_end_matches('=');
    let token68 = !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    (scheme.eq_ignore_ascii_case("bearer") && token68 && token.len() <= MAX_TOKEN_BYTES)
        .then_some(token)
}

/// The cache key of a token: its SHA-256 (the token itself is kept nowhere).
pub type Key = [u8; 32];

pub fn key(token: &str) -> Key {
    let mut k = [0; 32];
    k.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref());
    k
}

/// How long a verdict is kept.
pub fn ttl(v: Verdict) -> Duration {
    match v {
        Verdict::Allowed => ALLOWED_TTL,
        Verdict::Unauthenticated | Verdict::Forbidden => DENIED_TTL,
    }
}

/// Verdicts by token key, each until it expires, at most `cap` of them.
#[derive(Debug)]
pub struct Cache {
    cap: usize,
    entries: HashMap<Key, (Verdict, Instant)>,
}

impl Cache {
    pub fn new(cap: usize) -> Cache {
        Cache { cap, entries: HashMap::new() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The verdict on `k` if it has not expired at `now` (an expired one is dropped).
    pub fn get(&mut self, k: &Key, now: Instant) -> Option<Verdict> {
        let &(v, until) = self.entries.get(k)?;
        if now < until {
            return Some(v);
        }
        self.entries.remove(k);
        None
    }

    /// Keeps `v` for [`ttl`] from `now`. When full: the expired entries go, then the denial
    /// closest to expiring, and only if none is left the allowed one closest to expiring —
    /// made-up tokens fill the cache with denials and must not push out the real scrapers.
    pub fn put(&mut self, k: Key, v: Verdict, now: Instant) {
        if self.cap == 0 {
            return;
        }
        if !self.entries.contains_key(&k) && self.entries.len() >= self.cap {
            self.entries.retain(|_, (_, until)| now < *until);
            if self.entries.len() >= self.cap {
                let victim = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (v, until))| (*v == Verdict::Allowed, *until))
                    .map(|(k, _)| *k);
                if let Some(victim) = victim {
                    self.entries.remove(&victim);
                }
            }
        }
        self.entries.insert(k, (v, now + ttl(v)));
    }
}

/// The TokenReview asked for `token` (no audiences: the API server's own).
pub fn token_review(token: &str) -> TokenReview {
    TokenReview {
        spec: TokenReviewSpec { token: Some(token.to_string()), audiences: None },
        ..Default::default()
    }
}

/// The user a TokenReview's answer authenticated; None when it did not (or named nobody).
pub fn reviewed_user(answer: &TokenReview) -> Option<UserInfo> {
    let s = answer.status.as_ref()?;
    if s.authenticated != Some(true) {
        return None;
    }
    let user = s.user.clone()?;
    user.username.as_deref().is_some_and(|n| !n.is_empty()).then_some(user)
}

/// The SubjectAccessReview asked for `user`: may it `get` the non-resource URL `/metrics`?
/// Groups, uid and extra go along: an authorizer may grant by any of them.
pub fn access_review(user: &UserInfo) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            groups: user.groups.clone(),
            uid: user.uid.clone(),
            extra: user.extra.clone(),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(PATH.into()),
                verb: Some(VERB.into()),
            }),
            resource_attributes: None,
        },
        ..Default::default()
    }
}

/// Whether a SubjectAccessReview's answer allows the request.
pub fn access_allowed(answer: &SubjectAccessReview) -> bool {
    answer.status.as_ref().is_some_and(|s| s.allowed && s.denied != Some(true))
}

/// `--metrics-auth kubernetes`: the reviews, their cache and their bounds.
pub struct Authorizer {
    kubeconfig: Option<Kubeconfig>,
    /// Built on first use, on the HTTP thread's runtime; a failure is retried next request.
    client: tokio::sync::OnceCell<::kube::Client>,
    cache: Mutex<Cache>,
    /// Reviews in flight by peer address.
    reviews: Slots,
    last_error_log: Mutex<Option<Instant>>,
}

impl Authorizer {
    /// The authorizer `--metrics-auth` asks for (None: `none`). Reads `--kubeconfig` now, so a
    /// bad one stops the start.
    pub fn from_config(cfg: &Config) -> Result<Option<Authorizer>, Fatal> {
        match cfg.cli.metrics_auth {
            MetricsAuth::None => Ok(None),
            MetricsAuth::Kubernetes => {
                let kc = crate::kube::read_kubeconfig(cfg.cli.kubeconfig.as_deref())?;
                Ok(Some(Authorizer {
                    kubeconfig: kc,
                    client: tokio::sync::OnceCell::new(),
                    cache: Mutex::new(Cache::new(CACHE_ENTRIES)),
                    reviews: Slots::new(usize::MAX, REVIEWS_PER_PEER),
                    last_error_log: Mutex::new(None),
                }))
            }
        }
    }

    /// Whether the request from `peer` with these `Authorization` values may read `/metrics`.
    pub async fn check<'a>(
        &self,
        peer: IpAddr,
        authorization: impl Iterator<Item = &'a [u8]>,
    ) -> Outcome {
        let Some(token) = bearer_token(authorization) else { return Outcome::Unauthenticated };
        let k = key(token);
        let cached = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(&k, Instant::now());
        if let Some(v) = cached {
            return v.into();
        }
        let Ok(_in_flight) = self.reviews.admit(peer) else { return Outcome::Busy };
        let err = match tokio::time::timeout(REVIEW_TIMEOUT, self.review(token)).await {
            Ok(Ok(v)) => {
                self.cache.lock().unwrap_or_else(|e| e.into_inner()).put(k, v, Instant::now());
                return v.into();
            }
            Ok(Err(e)) => e,
            Err(_) => format!("no answer within {}s", REVIEW_TIMEOUT.as_secs()),
        };
        self.log_error(&err);
        Outcome::Unavailable
    }

    async fn review(&self, token: &str) -> Result<Verdict, String> {
        let client = self
            .client
            .get_or_try_init(|| crate::kube::client(self.kubeconfig.as_ref()))
            .await
            .map_err(|e| format!("no API client: {e}"))?;
        let pp = PostParams::default();
        let answer = Api::<TokenReview>::all(client.clone())
            .create(&pp, &token_review(token))
            .await
            .map_err(|e| format!("TokenReview: {e}"))?;
        let Some(user) = reviewed_user(&answer) else { return Ok(Verdict::Unauthenticated) };
        let answer = Api::<SubjectAccessReview>::all(client.clone())
            .create(&pp, &access_review(&user))
            .await
            .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        Ok(if access_allowed(&answer) { Verdict::Allowed } else { Verdict::Forbidden })
    }

    /// One line per 30 s at most: an API server that is down answers every scrape with an error.
    fn log_error(&self, e: &str) {
        let mut last = self.last_error_log.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(30)) {
            tracing::warn!("/metrics authorization: {e}; answering 503 (--metrics-auth kubernetes needs RBAC to create tokenreviews and subjectaccessreviews)");
            *last = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::TokenReviewStatus;
    use k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus;

    fn token(v: &str) -> Option<&str> {
        bearer_token(std::iter::once(v.as_bytes()))
    }

    #[test]
    fn a_bearer_token_is_taken_only_from_one_well_formed_header() {
        assert_eq!(token("Bearer abc.DEF-_~+/=="), Some("abc.DEF-_~+/=="));
        assert_eq!(token("bearer  eyJhbGciOi.x.y"), Some("eyJhbGciOi.x.y"), "any case, spaces");
        for bad in [
            "",
            "Bearer",
            "Bearer ",
            "Basic dXNlcjpwYXNz",
            "Bearer a b",
            "Bearer a\tb",
            "Bearer ===",
            "Bearer a=b",
            "Bearerabc",
            "Token abc",
        ] {
            assert_eq!(token(bad), None, "{bad:?}");
        }
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert_eq!(token(&long), None, "over the bound");
        assert_eq!(bearer_token(std::iter::empty()), None, "no header");
        let two = [b"Bearer a".as_slice(), b"Bearer b".as_slice()];
        assert_eq!(bearer_token(two.into_iter()), None, "two headers");
        assert_eq!(bearer_token(std::iter::once(&b"Bearer \xff"[..])), None, "not UTF-8");
    }

    #[test]
    fn the_key_is_the_tokens_sha256_not_the_token() {
        let k = key("abc");
        let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(key("abd"), k);
    }

    #[test]
    fn allowed_is_kept_a_minute_denied_ten_seconds() {
        let t0 = Instant::now();
        let mut c = Cache::new(8);
        c.put(key("ok"), Verdict::Allowed, t0);
        c.put(key("no"), Verdict::Forbidden, t0);
        c.put(key("who"), Verdict::Unauthenticated, t0);
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(c.get(&key("ok"), at(59)), Some(Verdict::Allowed));
        assert_eq!(c.get(&key("no"), at(9)), Some(Verdict::Forbidden));
        assert_eq!(c.get(&key("who"), at(9)), Some(Verdict::Unauthenticated));
        assert_eq!(c.get(&key("no"), at(10)), None);
        assert_eq!(c.get(&key("who"), at(11)), None);
        assert_eq!(c.get(&key("ok"), at(60)), None);
        assert!(c.is_empty(), "expired entries are dropped when met");
        assert_eq!(c.get(&key("never"), t0), None);
    }

    #[test]
    fn a_full_cache_drops_the_expired_then_denials_before_allowed_tokens() {
        let t0 = Instant::now();
        let mut c = Cache::new(4);
        c.put(key("scraper"), Verdict::Allowed, t0);
        for i in 0..100 {
            let t = t0 + Duration::from_millis(i * 10);
            c.put(key(&format!("made-up-{i}")), Verdict::Unauthenticated, t);
            assert!(c.len() <= 4);
        }
        let t = t0 + Duration::from_secs(1);
        assert_eq!(c.get(&key("scraper"), t), Some(Verdict::Allowed), "kept through the flood");
        assert_eq!(c.get(&key("made-up-99"), t), Some(Verdict::Unauthenticated), "newest kept");
        assert_eq!(c.get(&key("made-up-0"), t), None, "oldest denial dropped");
        // Only allowed entries: the one closest to expiring goes.
        let mut c = Cache::new(2);
        c.put(key("a"), Verdict::Allowed, t0);
        c.put(key("b"), Verdict::Allowed, t0 + Duration::from_secs(1));
        c.put(key("c"), Verdict::Allowed, t0 + Duration::from_secs(2));
        let t = t0 + Duration::from_secs(3);
        assert_eq!((c.get(&key("a"), t), c.get(&key("c"), t)), (None, Some(Verdict::Allowed)));
        // Expired entries make room before anything live is dropped.
        let mut c = Cache::new(2);
        c.put(key("old"), Verdict::Forbidden, t0);
        c.put(key("live"), Verdict::Forbidden, t0 + Duration::from_secs(8));
        c.put(key("new"), Verdict::Forbidden, t0 + Duration::from_secs(11));
        let t = t0 + Duration::from_secs(12);
        assert_eq!(c.get(&key("live"), t), Some(Verdict::Forbidden));
        // A verdict replaced in place needs no room.
        c.put(key("live"), Verdict::Allowed, t);
        assert_eq!((c.len(), c.get(&key("live"), t)), (2, Some(Verdict::Allowed)));
        assert_eq!(c.get(&key("new"), t), Some(Verdict::Forbidden));
    }

    #[test]
    fn the_token_review_carries_the_token_and_nothing_else() {
        let r = token_review("t0k3n");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "metadata": {},
                "spec": {"token": "t0k3n"}
            })
        );
    }

    fn reviewed(authenticated: Option<bool>, username: Option<&str>) -> TokenReview {
        TokenReview {
            status: Some(TokenReviewStatus {
                authenticated,
                user: Some(UserInfo {
                    username: username.map(Into::into),
                    uid: Some("u-1".into()),
                    groups: Some(vec!["system:serviceaccounts".into(), "g2".into()]),
                    extra: Some([("scopes".to_string(), vec!["s1".to_string()])].into()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn only_an_authenticated_review_naming_a_user_gives_a_user() {
        let sa = "system:serviceaccount:monitoring:prometheus";
        let u = reviewed_user(&reviewed(Some(true), Some(sa))).unwrap();
        assert_eq!(u.username.as_deref(), Some(sa));
        assert_eq!(reviewed_user(&reviewed(Some(false), Some(sa))), None);
        assert_eq!(reviewed_user(&reviewed(None, Some(sa))), None);
        assert_eq!(reviewed_user(&reviewed(Some(true), None)), None);
        assert_eq!(reviewed_user(&reviewed(Some(true), Some(""))), None);
        assert_eq!(reviewed_user(&TokenReview::default()), None, "no status");
    }

    #[test]
    fn the_access_review_asks_get_on_the_non_resource_url_metrics_for_the_whole_user() {
        let sa = "system:serviceaccount:monitoring:prometheus";
        let u = reviewed_user(&reviewed(Some(true), Some(sa))).unwrap();
        let v = serde_json::to_value(access_review(&u)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": {
                    "user": sa,
                    "uid": "u-1",
                    "groups": ["system:serviceaccounts", "g2"],
                    "extra": {"scopes": ["s1"]},
                    "nonResourceAttributes": {"path": "/metrics", "verb": "get"}
                }
            })
        );
    }

    #[test]
    fn access_is_allowed_only_when_the_answer_says_allowed_and_not_denied() {
        let answer = |allowed, denied| SubjectAccessReview {
            status: Some(SubjectAccessReviewStatus { allowed, denied, ..Default::default() }),
            ..Default::default()
        };
        assert!(access_allowed(&answer(true, None)));
        assert!(access_allowed(&answer(true, Some(false))));
        assert!(!access_allowed(&answer(false, None)));
        assert!(!access_allowed(&answer(false, Some(true))));
        assert!(!access_allowed(&answer(true, Some(true))), "an inconsistent answer refuses");
        assert!(!access_allowed(&SubjectAccessReview::default()), "no status");
    }
}
