//! `constant`: always the same action, given as JSON (`action=1`, `action=[0.5]`)
//! or, by default, the action space's lower bound / start.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Error, Layout, LeafKind, Params, Result, Rows};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "constant",
    summary: "the same action every step (`action=<json number or list>`, default: the space's minimum)",
    envs: &[],
    params: &[("action", "JSON number or (nested) list, for a single-leaf action space")],
    make,
};

fn make(spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&["action"])?;
    let layout = Layout::of(&spec.action_space);
    let mut row = Rows::new(layout.row_bytes(), 1);
    let bad = |m: String| Error::Param { name: "action".into(), message: m };
    for leaf in layout.leaves() {
        let vals: Vec<f64> = match &leaf.kind {
            LeafKind::Box { low, high } => low
                .iter()
                .zip(high)
                .map(|(l, h)| {
                    if l.is_finite() {
                        *l
                    } else if h.is_finite() {
                        *h
                    } else {
                        0.0
                    }
                })
                .collect(),
            LeafKind::Discrete { start, .. } => vec![*start as f64],
            LeafKind::MultiDiscrete { start, .. } => start.iter().map(|&s| s as f64).collect(),
            LeafKind::MultiBinary => vec![0.0; leaf.len()],
            // The shortest string of the charset's first character.
            LeafKind::Text { min_length, charset } => {
                (0..leaf.len()).map(|i| if i < *min_length { f64::from(u32::from(charset[0])) } else { 0.0 }).collect()
            }
        };
        vals.iter().enumerate().for_each(|(i, v)| leaf.dtype.write_f64(&mut row.row_mut(0)[leaf.offset..], i, *v));
    }
    if let Some(text) = p.raw("action") {
        if layout.leaves().len() != 1 {
            return Err(bad("only single-leaf action spaces take an explicit action".into()));
        }
        let json: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(format!("`{text}` is not JSON: {e}")))?;
        let mut flat = Vec::new();
        flatten(&json, &mut flat).ok_or_else(|| bad(format!("`{text}` is not a number or list of numbers")))?;
        let leaf = &layout.leaves()[0];
        if flat.len() != leaf.len().max(1) {
            return Err(bad(format!("{} values given, the action has {}", flat.len(), leaf.len().max(1))));
        }
        flat.iter().enumerate().for_each(|(i, v)| leaf.dtype.write_f64(&mut row.row_mut(0)[leaf.offset..], i, *v));
    }
    if !layout.contains_row(row.row(0)) {
        return Err(bad(format!("action is outside {}", spec.action_space.describe())));
    }
    Ok(Box::new(Constant { row: row.row(0).to_vec() }))
}

fn flatten(j: &serde_json::Value, out: &mut Vec<f64>) -> Option<()> {
    match j {
        serde_json::Value::Array(a) => a.iter().try_for_each(|x| flatten(x, out)),
        other => {
            out.push(other.as_f64()?);
            Some(())
        }
    }
}

struct Constant {
    row: Vec<u8>,
}

impl Agent for Constant {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        batch.for_each_row(|mut row| {
            row.action.bytes_mut().copy_from_slice(&self.row);
            Ok(())
        })
    }
}
