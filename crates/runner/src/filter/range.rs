//! `return` and `length`: label episodes whose return (or length) lies in
//! `[min, max]`; either bound may be left out.

use rollway_core::Params;

use super::{EpisodeLabeler, FilterEntry};
use rollway_core::episode::EpisodeResult;

/// Registry entry for `kind=return`.
pub static RETURN: FilterEntry =
    FilterEntry { kind: "return", summary: "episode return within [min, max]", keys: &["min", "max"], make: make_return };

/// Registry entry for `kind=length`.
pub static LENGTH: FilterEntry =
    FilterEntry { kind: "length", summary: "episode length within [min, max]", keys: &["min", "max"], make: make_length };

fn make_return(p: &Params, label: String) -> Result<Box<dyn EpisodeLabeler>, String> {
    RangeFilter::boxed(p, label, "return", |ep| ep.ret)
}

fn make_length(p: &Params, label: String) -> Result<Box<dyn EpisodeLabeler>, String> {
    RangeFilter::boxed(p, label, "length", |ep| ep.length as f64)
}

struct RangeFilter {
    what: &'static str,
    measure: fn(&EpisodeResult) -> f64,
    min: f64,
    max: f64,
    label: String,
}

impl RangeFilter {
    fn boxed(p: &Params, label: String, what: &'static str, measure: fn(&EpisodeResult) -> f64) -> Result<Box<dyn EpisodeLabeler>, String> {
        let bound = |key: &str| p.raw(key).map(|v| v.parse::<f64>().map_err(|e| format!("`{key}`: `{v}`: {e}"))).transpose();
        let (min, max) = (bound("min")?, bound("max")?);
        if min.is_none() && max.is_none() {
            return Err("give `min`, `max` or both".into());
        }
        let (min, max) = (min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY));
        if min > max {
            return Err(format!("min {min} > max {max}"));
        }
        Ok(Box::new(RangeFilter { what, measure, min, max, label }))
    }
}

impl EpisodeLabeler for RangeFilter {
    fn label(&self) -> &str {
        &self.label
    }
    fn describe(&self) -> String {
        format!("{}:[{}, {}]", self.what, self.min, self.max)
    }
    fn check(&self, ep: &EpisodeResult) -> bool {
        let x = (self.measure)(ep);
        x >= self.min && x <= self.max
    }
}
