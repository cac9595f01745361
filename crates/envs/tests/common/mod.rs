//! Reading the golden JSON files the `tests/golden/make_*.py` scripts write.

use serde_json::Value as Json;

/// `tests/golden/<name>.json`.
pub fn load(name: &str) -> Json {
    let path = format!("{}/tests/golden/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A float64 written as a `repr` string (exact, whatever the JSON number parser does).
pub fn f64_of(j: &Json) -> f64 {
    j.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a float64 string: {j}"))
}

/// A list of `repr` strings.
pub fn f64s(j: &Json) -> Vec<f64> {
    j.as_array().expect("list").iter().map(f64_of).collect()
}
