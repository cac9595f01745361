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

use std::path::{Path, PathBuf};

/// The URL schemes a dataset may be named with (besides a plain path).
pub const SCHEMES: &[&str] = &["file", "s3"];

/// The schemes of [`SCHEMES`] that name a dataset on an object store.
pub const OBJECT_STORES: &[&str] = &["s3"];

/// Schemes of remote stores, recognised even with their `//` collapsed (`s3:/b/x`:
/// what Python's `pathlib.Path("s3://b/x")` makes of a URL).
const REMOTE: &[&str] = &["s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl", "hf", "http", "https"];

/// The local directory `p` names: `p` itself, or the path of a `file://` URL
/// (`file:///data/x`, `file://localhost/data/x`). A URL of another scheme is an
/// error that says which schemes are supported.
pub fn local_dir(p: &Path) -> Result<PathBuf, String> {
    let Some(text) = p.to_str() else { return Ok(p.to_path_buf()) };
    let Some((scheme, rest)) = text.split_once("://") else {
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
}
