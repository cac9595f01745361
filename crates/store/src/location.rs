//! Where a dataset lives: a local directory, named by a path or a `file://` URL.
//!
//! A dataset path that looks like a URL of any other scheme (`s3://bucket/x`) is
//! refused by name, never taken for a relative path: the OS would read `s3://bucket/x`
//! as the local directory `./s3:/bucket/x`, and a run on a cluster would quietly
//! write one such directory per node and report success. Every front (the CLI's
//! dataset arguments, the Python bindings, the engine's run and rollout requests)
//! passes the paths it is given through [`local_dir`]; the schemes a build reads and
//! writes are [`SCHEMES`], and the refusal names them. Datasets on object stores
//! ([`OBJECT_STORES`]) are reached through `rollway-remote`, by the fronts that take
//! them; [`local_dir`] refuses them, saying that a local dataset is needed there.
//!
//! A URL never carries credentials (`s3://KEY:SECRET@bucket/x`): they would be echoed
//! by every error, log line, stored config and report that names the dataset. Such a
//! URL is refused, the refusal naming the `AWS_*` variables to use instead, and every
//! message that names a URL prints it through [`redacted`], which hides the userinfo.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The URL schemes a dataset may be named with (besides a plain path).
pub const SCHEMES: &[&str] = &["file", "s3"];

/// The schemes of [`SCHEMES`] that name a dataset on an object store.
pub const OBJECT_STORES: &[&str] = &["s3"];

/// Schemes of remote stores, recognised even with their `//` collapsed (`s3:/b/x`:
/// what Python's `pathlib.Path("s3://b/x")` makes of a URL).
const REMOTE: &[&str] = &["s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl", "hf", "http", "https"];

/// What to say of a URL that carries credentials (see the module docs).
pub const CREDENTIALS_REFUSED: &str = "credentials do not go in a dataset URL (they would be echoed by errors, logs, \
     stored configs and reports): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for \
     temporary ones) in the environment, and name the dataset s3://BUCKET/PREFIX";

/// Whether the URL `text` carries userinfo (`USER[:SECRET]@`) before its host, however its `@`
/// is written: `%40` (percent-encoded, also twice: `%2540`) and the full-width `＠` and small `﹫`
/// (which IDNA maps to `@`) count too. An S3 bucket name is letters, digits, `.` and `-`, so no
/// such authority names a bucket: it is credentials a user meant to hide in the URL.
pub fn has_credentials(text: &str) -> bool {
    authority(text).is_some_and(|a| userinfo_end(a).is_some())
}

/// `text` with the userinfo of its URL, if any, replaced by `***` (`s3://***@bucket/x`):
/// the form in which a URL is printed. An authority whose `@` shows only once its percent
/// escapes are decoded is hidden whole (`s3://***/x`).
pub fn redacted(text: &str) -> Cow<'_, str> {
    match (text.split_once("://"), authority(text)) {
        (Some((scheme, rest)), Some(a)) => match userinfo_end(a) {
            Some(Some(end)) => Cow::Owned(format!("{scheme}://***@{}{}", &a[end..], &rest[a.len()..])),
            Some(None) => Cow::Owned(format!("{scheme}://***{}", &rest[a.len()..])),
            None => Cow::Borrowed(text),
        },
        _ => Cow::Borrowed(text),
    }
}

/// The ways an `@` is written in a URL's authority, each as it appears in the text.
const AT_SIGNS: &[&str] = &["@", "%40", "%2540", "\u{ff20}", "\u{fe6b}"];

/// Where the host begins in the authority `a` if it carries userinfo: `Some(Some(byte))` just
/// after its last `@` (in any form of [`AT_SIGNS`]); `Some(None)` when only decoding the
/// authority (percent escapes, any depth) shows an `@`; `None` when it carries none.
fn userinfo_end(a: &str) -> Option<Option<usize>> {
    let lower = a.to_ascii_lowercase();
    let last = AT_SIGNS.iter().filter_map(|at| lower.rfind(at).map(|k| k + at.len())).max();
    if last.is_some() {
        return Some(last);
    }
    let mut text = lower;
    // Each pass undoes one level of percent-encoding; `%25` is `%` itself, so deeper levels unfold one by one.
    while text.contains('%') {
        let decoded = percent_decoded(&text);
        if AT_SIGNS.iter().any(|at| decoded.contains(at)) {
            return Some(None);
        }
        if decoded == text {
            break;
        }
        text = decoded;
    }
    None
}

/// `text` with each `%XX` escape replaced by its byte (invalid UTF-8 replaced).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let (mut out, mut i) = (Vec::with_capacity(bytes.len()), 0);
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The authority of the URL `text` (what lies between `://` and the next `/`), if it is a URL.
fn authority(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("://")?;
    Some(rest.split('/').next().unwrap_or(rest))
}

/// The local directory `p` names: `p` itself, or the path of a `file://` URL
/// (`file:///data/x`, `file://localhost/data/x`). A URL of another scheme is an
/// error that says which schemes are supported.
pub fn local_dir(p: &Path) -> Result<PathBuf, String> {
    let Some(raw) = p.to_str() else { return Ok(p.to_path_buf()) };
    let text = redacted(raw);
    let Some((scheme, rest)) = raw.split_once("://") else {
        return match text.split_once(":/") {
            Some((scheme, _)) if REMOTE.contains(&scheme.to_ascii_lowercase().as_str()) => {
                Err(format!("{text}: a `{scheme}://` URL with its `//` collapsed (as pathlib.Path does): pass the URL as a string"))
            }
            _ => Ok(p.to_path_buf()),
        };
    };
    // RFC 3986: a letter, then letters, digits, `+`, `-`, `.`; anything else is a path with `://` in it.
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        return Ok(p.to_path_buf());
    }
    let supported = SCHEMES.iter().map(|s| format!("{s}://")).collect::<Vec<_>>().join(", ");
    match scheme.to_ascii_lowercase().as_str() {
        "file" => match rest.strip_prefix("localhost").unwrap_or(rest) {
            local if local.starts_with('/') => Ok(PathBuf::from(local)),
            _ => Err(format!("{text}: a file:// URL names a path on this machine (file:///PATH)")),
        },
        _ if has_credentials(raw) => Err(format!("{text}: {CREDENTIALS_REFUSED}")),
        s if OBJECT_STORES.contains(&s) => {
            Err(format!("{text}: a dataset on an object store; a local dataset is needed here (a path or file://)"))
        }
        other => Err(format!(
            "{text}: datasets on `{other}://` are not supported by this build; a dataset is a local directory, \
             named by a path or one of: {supported}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> Result<PathBuf, String> {
        local_dir(Path::new(s))
    }

    #[test]
    fn paths_stay_paths_and_file_urls_become_paths() {
        for p in ["data/x", "/abs/x", "./s3", "weird:name/x", "a/b://c", "1s3://x"] {
            assert_eq!(local(p), Ok(PathBuf::from(p)));
        }
        assert_eq!(local("file:///data/x"), Ok(PathBuf::from("/data/x")));
        assert_eq!(local("FILE://localhost/data/x"), Ok(PathBuf::from("/data/x")));
        assert!(local("file://otherhost/x").unwrap_err().contains("file:///PATH"));
    }

    #[test]
    fn issue45_other_schemes_are_refused_naming_the_supported_ones() {
        for url in ["gs://b/x", "az://c/x", "hf://datasets/x", "s3+https://h/b"] {
            let e = local(url).unwrap_err();
            assert!(e.starts_with(url) && e.contains("not supported") && e.contains("file://"), "{e}");
        }
        assert!(local("s3://bucket/x").unwrap_err().contains("a local dataset is needed here"));
        // pathlib.Path("s3://b/x") is "s3:/b/x": still refused, saying why.
        assert!(local("s3:/bucket/x").unwrap_err().contains("pass the URL as a string"));
    }

    #[test]
    fn issue54_credentials_in_a_url_are_refused_and_never_echoed() {
        for url in ["s3://AKIA1:hunter2@bucket/d", "s3://hunter2@bucket", "gs://AKIA1:hunter2@b/x"] {
            let e = local(url).unwrap_err();
            assert!(!e.contains("hunter2") && !e.contains("AKIA1") && e.contains("***@b") && e.contains("AWS_SECRET_ACCESS_KEY"), "{e}");
        }
        assert_eq!(redacted("s3://K:S@bucket/a@b/c"), "s3://***@bucket/a@b/c", "an @ in the path is not userinfo");
        assert_eq!(redacted("s3://bucket/a@b"), "s3://bucket/a@b");
        assert!(!has_credentials("s3://bucket/x@y") && has_credentials("s3://k:s@bucket"));
        assert_eq!(redacted("data/x"), "data/x");
    }

    #[test]
    fn issue72_an_encoded_at_sign_is_credentials_too_and_is_hidden() {
        let hidden = [
            ("s3://KEY:hunter2%40bucket/d", "s3://***@bucket/d"),
            ("s3://KEY:hunter2%2540bucket/d", "s3://***@bucket/d"),
            ("s3://KEY:hunter2\u{ff20}bucket/d", "s3://***@bucket/d"),
            ("s3://KEY:hunter2\u{fe6b}bucket/d", "s3://***@bucket/d"),
            ("S3://KEY:hunter2%2525252540bucket/d", "S3://***/d"),
            ("s3://KEY%3aSECRET%2a%40bucket", "s3://***@bucket"),
        ];
        for (url, shown) in hidden {
            assert!(has_credentials(url), "{url}");
            assert_eq!(redacted(url), shown);
            let e = local(url).unwrap_err();
            assert!(!e.contains("hunter2") && e.contains("AWS_SECRET_ACCESS_KEY"), "{e}");
        }
        for plain in ["s3://bucket/a%40b", "s3://my-bucket.x/d", "s3://b%41c/d", "s3://b%zz/d"] {
            assert!(!has_credentials(plain), "{plain}");
            assert_eq!(redacted(plain), plain);
        }
    }
}
