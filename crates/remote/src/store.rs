//! One dataset's place on an object store: the client, its prefix, and blocking
//! calls over the store's async API.
//!
//! The client is `object_store`'s S3 client, configured the way the AWS tools are:
//! credentials and region from the standard `AWS_*` variables (or the instance's
//! role), `AWS_ENDPOINT_URL` for S3-compatible stores (MinIO, Ceph, R2, a test
//! server; plain `http://` endpoints are allowed when named), and its retries with
//! exponential backoff on 5xx, `SlowDown` and dropped connections (16 retries, each
//! wait drawn between 0.1 s and twice the last, at most 10 s: measured 2.6–59 s before
//! a request gives up, median 6–7 s, `bench/store_retry.py`). Each [`Remote`]
//! owns a small tokio runtime; the rest of rollway is threads, so every call here
//! blocks its caller, and the replica's transfers run many requests at once inside
//! one `block_on`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as Key;
use object_store::{BackoffConfig, ObjectStore, PutMode, PutOptions, PutPayload, RetryConfig};

use crate::{Error, Result};

/// The URL schemes [`Remote::open`] reaches.
pub const REMOTE_SCHEMES: &[&str] = &["s3"];

/// A dataset's prefix on an object store.
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    bucket: String,
    prefix: String,
    url: String,
    rt: tokio::runtime::Runtime,
}

/// A listed object: its name below the listed folder and its size.
pub(crate) struct Listed {
    pub(crate) name: String,
    pub(crate) size: u64,
}

impl Remote {
    /// Whether `text` names a dataset on an object store (`s3://…`).
    pub fn is_remote(text: &str) -> bool {
        text.split_once("://").is_some_and(|(s, _)| REMOTE_SCHEMES.contains(&s.to_ascii_lowercase().as_str()))
    }

    /// The store at `url` (`s3://bucket/prefix`), checked reachable: a missing bucket
    /// or refused credentials is an error here, before any work starts.
    pub fn open(url: &str) -> Result<Remote> {
        let bad = |message: &str| Error::Url { url: rollway_store::redacted(url).into_owned(), message: message.to_string() };
        if rollway_store::has_credentials(url) {
            return Err(bad(rollway_store::CREDENTIALS_REFUSED));
        }
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL"))?;
        if !REMOTE_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(bad(&format!("unsupported scheme; object stores are reached by {}", schemes())));
        }
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let prefix = prefix.trim_matches('/');
        if bucket.is_empty() {
            return Err(bad("no bucket: s3://BUCKET/PREFIX"));
        }
        if prefix.split('/').any(|c| c == "." || c == "..") || prefix.contains("//") {
            return Err(bad("the prefix has an empty, `.` or `..` component"));
        }
        // A throttling store (`503 SlowDown`) or one restarting needs more patience than the
        // client's default (10 retries): 16, each wait jittered up to twice the last, at most 10 s.
        let backoff = BackoffConfig { init_backoff: Duration::from_millis(100), max_backoff: Duration::from_secs(10), base: 2.0 };
        let retry = RetryConfig { backoff, max_retries: 16, retry_timeout: Duration::from_secs(180) };
        let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket).with_retry(retry);
        let endpoint = std::env::var("AWS_ENDPOINT_URL").or_else(|_| std::env::var("AWS_ENDPOINT")).unwrap_or_default();
        if endpoint.starts_with("http://") {
            b = b.with_allow_http(true);
        }
        let store = b.build().map_err(|e| bad(&format!("configuring the S3 client: {e}")))?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|source| Error::Local {
            op: "starting the store client's runtime",
            path: Default::default(),
            source,
        })?;
        let r = Remote { store: Arc::new(store), bucket: bucket.to_string(), prefix: prefix.to_string(), url: url.to_string(), rt };
        let check = r.rt.block_on(r.store.list_with_delimiter(Some(&r.key(""))));
        check.map_err(|e| Error::Unreachable { url: url.to_string(), source: Box::new(e) })?;
        Ok(r)
    }

    /// The dataset's URL, as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Bucket and prefix, for naming local replicas.
    pub(crate) fn bucket_and_prefix(&self) -> (&str, &str) {
        (&self.bucket, &self.prefix)
    }

    pub(crate) fn key(&self, rel: &str) -> Key {
        match (self.prefix.is_empty(), rel.is_empty()) {
            (true, _) => Key::from(rel),
            (false, true) => Key::from(self.prefix.as_str()),
            (false, false) => Key::from(format!("{}/{rel}", self.prefix)),
        }
    }

    /// The URL of `rel` inside the dataset, for messages.
    pub(crate) fn url_of(&self, rel: &str) -> String {
        format!("{}/{rel}", self.url.trim_end_matches('/'))
    }

    fn err(&self, op: &'static str, rel: &str) -> impl FnOnce(object_store::Error) -> Error + '_ {
        let url = self.url_of(rel);
        move |source| Error::Store { op, url, source: Box::new(source) }
    }

    /// `e`, from `op` on `rel`, with its context.
    pub(crate) fn store_err(&self, op: &'static str, rel: &str, e: object_store::Error) -> Error {
        self.err(op, rel)(e)
    }

    /// Objects directly below folder `rel` (`index`, or `""` for the top).
    pub(crate) fn list(&self, rel: &str) -> Result<Vec<Listed>> {
        let key = self.key(rel);
        let listing = self.rt.block_on(self.store.list_with_delimiter(Some(&key))).map_err(self.err("listing", rel))?;
        let names = listing.objects.into_iter().filter_map(|o| Some(Listed { name: o.location.filename()?.to_string(), size: o.size }));
        Ok(names.collect())
    }

    /// The bytes of `rel`, or `None` when there is no such object.
    pub(crate) fn get(&self, rel: &str) -> Result<Option<Bytes>> {
        let key = self.key(rel);
        let got = self.rt.block_on(async { self.store.get(&key).await?.bytes().await });
        match got {
            Ok(b) => Ok(Some(b)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err("reading", rel)(e)),
        }
    }

    /// Writes `rel`; with `create`, only if no object has that name (`false` then).
    pub(crate) fn put(&self, rel: &str, bytes: Bytes, create: bool) -> Result<bool> {
        let key = self.key(rel);
        let mode = if create { PutMode::Create } else { PutMode::Overwrite };
        let put = self.rt.block_on(self.store.put_opts(&key, PutPayload::from_bytes(bytes), PutOptions::from(mode)));
        match put {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(self.err("uploading", rel)(e)),
        }
    }

    /// Whether `rel` exists (a HEAD request).
    pub(crate) fn exists(&self, rel: &str) -> Result<bool> {
        match self.rt.block_on(self.store.head(&self.key(rel))) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.err("reading", rel)(e)),
        }
    }

    /// Deletes `rel`; an object already gone is not an error.
    pub(crate) fn delete(&self, rel: &str) -> Result<()> {
        match self.rt.block_on(self.store.delete(&self.key(rel))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err("deleting", rel)(e)),
        }
    }

    /// Every object below folder `rel`, at any depth: paths relative to the dataset.
    pub(crate) fn list_all(&self, rel: &str) -> Result<Vec<String>> {
        let key = self.key(rel);
        let top = self.key("");
        let found: Vec<_> = self.rt.block_on(self.store.list(Some(&key)).try_collect::<Vec<_>>()).map_err(self.err("listing", rel))?;
        let strip = |p: &str| {
            if top.as_ref().is_empty() {
                p.to_string()
            } else {
                p.strip_prefix(&format!("{}/", top.as_ref())).unwrap_or(p).to_string()
            }
        };
        Ok(found.into_iter().map(|o| strip(o.location.as_ref())).collect())
    }

    /// The names of the objects in folder `rel` whose names sort after `after` (a
    /// listing that starts there, as S3's `start-after`: one page for what is new).
    pub(crate) fn names_after(&self, rel: &str, after: &str) -> Result<Vec<String>> {
        let (key, offset) = (self.key(rel), self.key(&format!("{rel}/{after}")));
        let found: Vec<_> =
            self.rt.block_on(self.store.list_with_offset(Some(&key), &offset).try_collect::<Vec<_>>()).map_err(self.err("listing", rel))?;
        Ok(found.into_iter().filter_map(|o| Some(o.location.filename()?.to_string())).collect())
    }

    /// Whether the store holds a dataset here (its `rollway.json`).
    pub fn holds_dataset(&self) -> Result<bool> {
        Ok(self.list("")?.iter().any(|l| l.name == "rollway.json"))
    }

    /// Runs `jobs` (each a request) `width` at a time; the first error wins.
    pub(crate) fn all<T, F>(&self, width: usize, jobs: Vec<F>) -> Result<Vec<T>>
    where
        F: std::future::Future<Output = Result<T>>,
    {
        self.rt.block_on(futures::stream::iter(jobs).buffered(width).try_collect())
    }

    /// The client, for futures passed to [`Remote::all`].
    pub(crate) fn client(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }
}

/// `s3://` (every scheme [`Remote::open`] reaches), for messages.
pub fn schemes() -> String {
    REMOTE_SCHEMES.iter().map(|s| format!("{s}://")).collect::<Vec<_>>().join(", ")
}

/// Whether the dataset argument `p` names an object store (`s3://…`).
pub fn is_remote(p: &std::path::Path) -> bool {
    p.to_str().is_some_and(Remote::is_remote)
}
