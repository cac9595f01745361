//! Finding ONNX Runtime's shared library at run time.
//!
//! rollway links no ONNX Runtime: a build downloads nothing, and the wheel stays
//! small. The library is looked for, in order, at `runtime=PATH` (a file, or a
//! folder holding `libonnxruntime.so*`), at `$ORT_DYLIB_PATH` (the `ort` crate's
//! own variable), and in the `onnxruntime` (or `onnxruntime-gpu`) pip package of
//! the run's Python, found with `importlib.util.find_spec`, which reads no module.
//! The answer for each Python is kept for the process: asking costs one
//! interpreter start (~30 ms).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The library's file-name prefix.
const LIB: &str = "libonnxruntime.so";

/// The newest `libonnxruntime.so*` in `dir` (or `dir/capi`, the pip package's folder).
fn in_dir(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = [dir.to_path_buf(), dir.join("capi")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(LIB)))
        .collect();
    found.sort();
    found.pop()
}

/// The library at `path`: the file itself, or the one in the folder.
fn at(path: &Path, from: &str) -> Result<PathBuf, String> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if path.is_dir() {
        return in_dir(path).ok_or_else(|| format!("{from} {}: no {LIB}* in that folder", path.display()));
    }
    Err(format!("{from} {}: no such file or folder", path.display()))
}

/// The `onnxruntime` package folder of `python`, if it has one.
fn package_of(python: &Path) -> Result<PathBuf, String> {
    let code = "import importlib.util as u; s = u.find_spec('onnxruntime'); print(s.submodule_search_locations[0] if s else '')";
    let out = Command::new(python)
        .args(["-c", code])
        .output()
        .map_err(|e| format!("could not run {} to find its onnxruntime package: {e}", python.display()))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || dir.is_empty() {
        return Err(format!(
            "no ONNX Runtime found: {} has no onnxruntime package (pip install onnxruntime, or onnxruntime-gpu for CUDA), \
             and neither runtime=PATH nor $ORT_DYLIB_PATH is set",
            python.display()
        ));
    }
    in_dir(Path::new(&dir)).ok_or_else(|| format!("{dir} has no {LIB}*: is the onnxruntime package whole?"))
}

/// ONNX Runtime's library: `given`, else `$ORT_DYLIB_PATH`, else `python`'s package.
pub fn find(given: Option<&Path>, python: &Path) -> Result<PathBuf, String> {
    if let Some(p) = given {
        return at(p, "runtime=");
    }
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        return at(Path::new(&p), "$ORT_DYLIB_PATH=");
    }
    static SEEN: Mutex<Option<HashMap<PathBuf, Result<PathBuf, String>>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    seen.get_or_insert_with(HashMap::new).entry(python.to_path_buf()).or_insert_with(|| package_of(python)).clone()
}
