//! Episode filters, named after MineStudio's (`InfoBaseFilter`, `--filter`), but
//! rollway's only label: each looks at a finished episode and may give it a
//! label; no episode is dropped (readers and loaders select by label), so the
//! trait is an [`EpisodeLabeler`]. One file per filter plus one line in [`REGISTRY`].
//!
//! A filter is written `kind=info,key=mine_block,val=diamond.*,num=1,label=diamond`;
//! `kind` may be left out when `key` is given (an info filter).

use rollway_core::Params;

use crate::{Error, Result};
use rollway_core::episode::EpisodeResult;

mod info;
mod range;

/// A rule that labels episodes (never drops one).
pub trait EpisodeLabeler: Send + Sync {
    /// The label it gives.
    fn label(&self) -> &str;
    /// A short description, stored with each label it gives.
    fn describe(&self) -> String;
    /// True when the episode earns the label.
    fn check(&self, episode: &EpisodeResult) -> bool;
}

/// A registered filter kind.
pub struct FilterEntry {
    /// `kind=` value.
    pub kind: &'static str,
    /// One line for `--help`.
    pub summary: &'static str,
    /// Accepted keys besides `kind` and `label`.
    pub keys: &'static [&'static str],
    /// Builds the filter from its keys and label.
    pub make: MakeFilter,
}

/// Builds a filter from its keys and label, or says what is wrong with them.
pub type MakeFilter = fn(&Params, String) -> std::result::Result<Box<dyn EpisodeLabeler>, String>;

/// Every filter kind. Adding one: write its file, add its `ENTRY` here.
pub static REGISTRY: &[&FilterEntry] = &[&info::ENTRY, &range::RETURN, &range::LENGTH];

/// Parses one filter specification.
pub fn parse(spec: &str) -> Result<Box<dyn EpisodeLabeler>> {
    let err = |message: String| Error::Filter { spec: spec.into(), message };
    let params = Params::parse(spec).map_err(|e| err(e.to_string()))?;
    let kind = match params.raw("kind") {
        Some(k) => k.to_string(),
        None if params.raw("key").is_some() => "info".into(),
        None => return Err(err("give `kind=` (one of: info, return, length) or an info filter's `key=`".into())),
    };
    let entry = REGISTRY
        .iter()
        .find(|e| e.kind == kind)
        .ok_or_else(|| err(format!("unknown kind `{kind}` (known: {})", REGISTRY.iter().map(|e| e.kind).collect::<Vec<_>>().join(", "))))?;
    let mut known = vec!["kind", "label"];
    known.extend_from_slice(entry.keys);
    params.expect_only(&known).map_err(|e| err(e.to_string()))?;
    let label = params.raw("label").unwrap_or("status").to_string();
    if label.is_empty() {
        return Err(err("`label` must not be empty".into()));
    }
    (entry.make)(&params, label).map_err(err)
}

/// Runs every filter on an episode and records the labels it earns.
pub fn apply(filters: &[Box<dyn EpisodeLabeler>], episode: &mut EpisodeResult) {
    episode.labels.clear();
    for f in filters {
        if f.check(episode) && !episode.labels.iter().any(|l| l.label == f.label()) {
            episode.labels.push(rollway_core::Label { label: f.label().to_string(), filter: f.describe() });
        }
    }
}
