//! `info`: MineStudio's `InfoBaseFilter(key, val, num, label)`.
//!
//! Reads the episode's final info, takes the map under `key`, adds up the counts
//! of every entry whose name matches the regex `val` — matched at the start of the
//! name, as Python's `re.match` does, so `val=diamond` matches `diamond_ore` — and
//! gives the label when the sum is at least `num`. A missing key counts as 0.

use regex::Regex;
use rollway_core::Params;

use super::{EpisodeLabeler, FilterEntry};
use rollway_core::episode::EpisodeResult;

/// Registry entry.
pub static ENTRY: FilterEntry = FilterEntry {
    kind: "info",
    summary: "sum of final-info counts under `key` whose names match regex `val` (anchored at the start) ≥ `num`",
    keys: &["key", "val", "num"],
    make,
};

fn make(p: &Params, label: String) -> Result<Box<dyn EpisodeLabeler>, String> {
    let key = p.raw("key").ok_or("missing `key`")?.to_string();
    let val = p.raw("val").unwrap_or(".*");
    let re = Regex::new(&format!("^(?:{val})")).map_err(|e| format!("`val` is not a valid regex: {e}"))?;
    let num = p.get("num", 1.0f64).map_err(|e| e.to_string())?;
    Ok(Box::new(InfoFilter { key, val: val.to_string(), re, num, label }))
}

struct InfoFilter {
    key: String,
    val: String,
    re: Regex,
    num: f64,
    label: String,
}

impl InfoFilter {
    fn total(&self, ep: &EpisodeResult) -> f64 {
        let Some(map) = ep.info.get_path(&self.key).and_then(|v| v.as_object()) else { return 0.0 };
        map.iter().filter(|(name, _)| self.re.is_match(name)).filter_map(|(_, v)| v.as_f64()).sum()
    }
}

impl EpisodeLabeler for InfoFilter {
    fn label(&self) -> &str {
        &self.label
    }
    fn describe(&self) -> String {
        format!("info:{}[{}]>={}", self.key, self.val, self.num)
    }
    fn check(&self, ep: &EpisodeResult) -> bool {
        self.total(ep) >= self.num
    }
}
