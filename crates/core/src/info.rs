//! Per-step information maps, as nested JSON-like values.
//!
//! MineStudio infos look like `{"mine_block": {"diamond_ore": 1}, "pickup": {...}}`;
//! Gymnasium infos are arbitrary dicts. A JSON object covers both and serializes
//! without a schema, which is what recorders want.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

/// An info dict: string keys to numbers, strings, bools, lists (arrays) and nested maps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Info(pub Map<String, Json>);

impl Info {
    /// An empty info.
    pub fn new() -> Info {
        Info(Map::new())
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Json>) {
        self.0.insert(key.into(), value.into());
    }

    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.0.get(key)
    }

    /// Follows a `/`-separated path through nested maps (`"mine_block/diamond_ore"`).
    pub fn get_path(&self, path: &str) -> Option<&Json> {
        let mut parts = path.split('/');
        let mut cur = self.0.get(parts.next()?)?;
        for p in parts {
            cur = cur.as_object()?.get(p)?;
        }
        Some(cur)
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The map sorted by key is what serde_json gives without `preserve_order`,
    /// so two equal infos serialize to identical bytes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.0).expect("info maps always serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_path_lookup() {
        let mut i = Info::new();
        i.insert("mine_block", serde_json::json!({"diamond_ore": 2}));
        assert_eq!(i.get_path("mine_block/diamond_ore").and_then(Json::as_i64), Some(2));
        assert!(i.get_path("mine_block/coal").is_none());
    }
}
