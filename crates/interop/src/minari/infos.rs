//! Per-step infos ↔ Minari's `infos` group.
//!
//! Minari stores infos as a group of datasets with one row per observation
//! (T+1, the reset info first), nested dicts as subgroups. rollway keeps them as
//! JSON. Only what HDF5 holds as plain arrays converts: numbers, bools and
//! rectangular arrays of them, present with the same shape at every step. The
//! rest (strings, ragged lists, keys that come and go) is skipped and reported.

use std::collections::BTreeMap;

use hdf5_metno as hdf5;
use rollway_core::{DType, Info};
use serde_json::{Map, Value as Json};

use super::h5::{self, Kind};
use super::h5raw;

/// One info key's values (one row, or an episode's rows), flattened.
pub(super) struct Column {
    pub kind: Kind,
    /// Shape of one row's value (empty for a scalar).
    pub shape: Vec<usize>,
    /// The values as integers (and bools as 0/1), whatever `kind`.
    pub ints: Vec<i64>,
    /// The values as floats, whatever `kind`.
    pub floats: Vec<f64>,
}

/// Flattens one JSON value; `None` when it is not numeric and rectangular.
fn leaf(v: &Json) -> Option<Column> {
    let scalar = |kind, i, f| Some(Column { kind, shape: vec![], ints: vec![i], floats: vec![f] });
    match v {
        Json::Bool(b) => scalar(Kind::Bool, i64::from(*b), f64::from(u8::from(*b))),
        Json::Number(n) => match n.as_i64() {
            Some(i) => scalar(Kind::Int, i, i as f64),
            None => scalar(Kind::Float, 0, n.as_f64()?),
        },
        Json::Array(items) if !items.is_empty() => {
            let parts: Vec<Column> = items.iter().map(leaf).collect::<Option<_>>()?;
            let first = &parts[0];
            if parts.iter().any(|p| p.shape != first.shape || (p.kind == Kind::Bool) != (first.kind == Kind::Bool)) {
                return None;
            }
            let kind = if parts.iter().any(|p| p.kind == Kind::Float) { Kind::Float } else { first.kind };
            let mut shape = vec![items.len()];
            shape.extend(&first.shape);
            let ints = parts.iter().flat_map(|p| p.ints.iter().copied()).collect();
            let floats = parts.iter().flat_map(|p| p.floats.iter().copied()).collect();
            Some(Column { kind, shape, ints, floats })
        }
        _ => None,
    }
}

/// `path → value` for every non-object value, nested objects joined with `/`.
fn flatten<'a>(prefix: &str, m: &'a Map<String, Json>, out: &mut BTreeMap<String, &'a Json>, bad: &mut Vec<String>) {
    for (k, v) in m {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}/{k}") };
        if k.is_empty() || k.contains('/') || k == "." {
            // Not representable as an HDF5 link name.
            bad.push(path);
            continue;
        }
        match v {
            Json::Object(inner) => flatten(&path, inner, out, bad),
            other => {
                out.insert(path, other);
            }
        }
    }
}

/// The episode's infos as one column per info path (`a/b` for nested dicts), each
/// with a row per info; returns also the paths that do not convert.
pub(super) fn columns(infos: &[Info]) -> (Vec<(String, Column)>, Vec<String>) {
    let mut skipped = Vec::new();
    let rows: Vec<BTreeMap<String, &Json>> = infos
        .iter()
        .map(|i| {
            let mut m = BTreeMap::new();
            flatten("", &i.0, &mut m, &mut skipped);
            m
        })
        .collect();
    let mut out = Vec::new();
    // A key must appear in every row; keys missing somewhere are skipped.
    let all: std::collections::BTreeSet<&String> = rows.iter().flat_map(|r| r.keys()).collect();
    for path in all {
        let mut col: Option<Column> = None;
        let mut ok = true;
        for r in &rows {
            let Some(v) = r.get(path).and_then(|v| leaf(v)) else {
                ok = false;
                break;
            };
            let c = col.get_or_insert_with(|| Column { kind: v.kind, shape: v.shape.clone(), ints: vec![], floats: vec![] });
            if c.shape != v.shape || (c.kind == Kind::Bool) != (v.kind == Kind::Bool) {
                ok = false;
                break;
            }
            if v.kind == Kind::Float {
                c.kind = Kind::Float;
            }
            c.ints.extend(v.ints);
            c.floats.extend(v.floats);
        }
        match col.filter(|_| ok) {
            None => skipped.push(path.clone()),
            Some(c) => out.push((path.clone(), c)),
        }
    }
    skipped.sort();
    skipped.dedup();
    (out, skipped)
}

/// Writes the episode's infos under `group`; returns the keys that could not be written.
pub(crate) fn write(w: &h5raw::Writer, group: &hdf5::Group, infos: &[Info]) -> hdf5::Result<Vec<String>> {
    let (cols, skipped) = columns(infos);
    for (path, c) in cols {
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", &path));
        let g = h5::group_at(group, parent)?;
        let mut shape = vec![infos.len()];
        shape.extend(&c.shape);
        match c.kind {
            Kind::Int => w.array(&g, name, DType::I64, &shape, bytemuck::cast_slice(c.ints.as_slice()))?,
            Kind::Float => w.array(&g, name, DType::F64, &shape, bytemuck::cast_slice(c.floats.as_slice()))?,
            Kind::Bool => w.array(&g, name, DType::Bool, &shape, &c.ints.iter().map(|&x| u8::from(x != 0)).collect::<Vec<_>>())?,
        }
    }
    Ok(skipped)
}

/// Rebuilds `value` of one row from a flat buffer and the row's shape.
pub(super) fn nest(shape: &[usize], vals: &mut impl Iterator<Item = Json>) -> Json {
    match shape.split_first() {
        None => vals.next().unwrap_or(Json::Null),
        Some((&n, rest)) => Json::Array((0..n).map(|_| nest(rest, vals)).collect()),
    }
}

/// Reads an `infos` group into `rows` infos; datasets without `rows` rows or with
/// non-numeric data are skipped and their paths returned.
pub(crate) fn read(group: &hdf5::Group, rows: usize) -> hdf5::Result<(Vec<Info>, Vec<String>)> {
    let mut out = vec![Info::new(); rows];
    let mut skipped = Vec::new();
    read_into(group, "", rows, &mut out, &mut skipped)?;
    Ok((out, skipped))
}

pub(super) fn insert(info: &mut Info, path: &str, v: Json) {
    let mut parts = path.split('/').peekable();
    let mut m = &mut info.0;
    while let Some(p) = parts.next() {
        if parts.peek().is_none() {
            m.insert(p.to_string(), v);
            return;
        }
        let e = m.entry(p.to_string()).or_insert_with(|| Json::Object(Map::new()));
        if !e.is_object() {
            *e = Json::Object(Map::new());
        }
        m = e.as_object_mut().expect("made an object above");
    }
}

fn read_into(group: &hdf5::Group, prefix: &str, rows: usize, out: &mut [Info], skipped: &mut Vec<String>) -> hdf5::Result<()> {
    for name in group.member_names()? {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        match group.loc_type_by_name(&name)? {
            hdf5::LocationType::Group => read_into(&group.group(&name)?, &path, rows, out, skipped)?,
            hdf5::LocationType::Dataset => {
                let ds = group.dataset(&name)?;
                let shape = ds.shape();
                let kind = h5::kind_of(&ds);
                let (Some(kind), Some(&n)) = (kind, shape.first()) else {
                    skipped.push(path);
                    continue;
                };
                if n != rows || h5::checked_size(&ds).is_err() {
                    skipped.push(path);
                    continue;
                }
                let per_row: usize = shape[1..].iter().product();
                let vals: Vec<Json> = match kind {
                    Kind::Int => ds.read_raw::<i64>()?.into_iter().map(Json::from).collect(),
                    Kind::Float => ds.read_raw::<f64>()?.into_iter().map(Json::from).collect(),
                    Kind::Bool => h5::read_bools(&ds, &shape).map_err(hdf5::Error::from)?.into_iter().map(Json::from).collect(),
                };
                for (r, info) in out.iter_mut().enumerate() {
                    let mut it = vals[r * per_row..(r + 1) * per_row].iter().cloned();
                    insert(info, &path, nest(&shape[1..], &mut it));
                }
            }
            _ => skipped.push(path),
        }
    }
    Ok(())
}
