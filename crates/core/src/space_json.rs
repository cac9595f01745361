//! Space JSON in the exact shape Minari writes (`minari/serialization.py`), so that
//! datasets carry spaces that Python tools read back with `json.loads`.
//!
//! Python's `json` writes non-finite floats as bare `Infinity`/`-Infinity`/`NaN`
//! tokens (CartPole's Box has infinite bounds), which strict JSON parsers reject;
//! we emit and accept those tokens the way Python does.

use serde_json::Value as Json;
use std::fmt::Write;

use crate::{DType, Error, Result, Space};

impl Space {
    /// Serializes to Minari's space JSON: `{"type": "Box", "dtype": "float32", "shape": [4], "low": [...], "high": [...]}`.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        emit(self, &mut s);
        s
    }

    /// Parses Minari's space JSON (including Python's `Infinity`/`NaN` tokens).
    pub fn from_json(text: &str) -> Result<Space> {
        let json: Json =
            serde_json::from_str(&quote_non_finite(text)).map_err(|e| Error::SpaceJson { path: "$".into(), message: e.to_string() })?;
        parse(&json, "$")
    }
}

fn emit(space: &Space, out: &mut String) {
    match space {
        Space::Box(b) => {
            let _ = write!(
                out,
                r#"{{"type": "Box", "dtype": "{}", "shape": {}, "low": "#,
                b.dtype,
                int_list(b.shape.iter().map(|&x| x as i64))
            );
            emit_nested(&b.low, &b.shape, b.dtype, out);
            out.push_str(", \"high\": ");
            emit_nested(&b.high, &b.shape, b.dtype, out);
            out.push('}');
        }
        Space::Discrete { n, start } => {
            let _ = write!(out, r#"{{"type": "Discrete", "dtype": "int64", "start": {start}, "n": {n}}}"#);
        }
        Space::MultiDiscrete { nvec, start } => {
            let _ = write!(
                out,
                r#"{{"type": "MultiDiscrete", "dtype": "int64", "nvec": {}, "start": {}}}"#,
                int_list(nvec.iter().copied()),
                int_list(start.iter().copied())
            );
        }
        Space::MultiBinary { shape } => {
            let _ = write!(out, r#"{{"type": "MultiBinary", "dtype": "int8", "n": {}}}"#, int_list(shape.iter().map(|&x| x as i64)));
        }
        Space::Text { min_length, max_length, charset } => {
            let charset: String = charset.iter().collect();
            let charset = serde_json::to_string(&charset).expect("strings serialize");
            let _ = write!(out, r#"{{"type": "Text", "max_length": {max_length}, "min_length": {min_length}, "charset": {charset}}}"#);
        }
        Space::Dict(items) => {
            out.push_str(r#"{"type": "Dict", "subspaces": {"#);
            for (i, (k, s)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k).expect("strings serialize"));
                out.push_str(": ");
                emit(s, out);
            }
            out.push_str("}}");
        }
        Space::Tuple(items) => {
            out.push_str(r#"{"type": "Tuple", "subspaces": ["#);
            for (i, s) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                emit(s, out);
            }
            out.push_str("]}");
        }
    }
}

fn int_list(it: impl Iterator<Item = i64>) -> String {
    let v: Vec<String> = it.map(|x| x.to_string()).collect();
    format!("[{}]", v.join(", "))
}

fn number(x: f64, dtype: DType, out: &mut String) {
    if x.is_nan() {
        out.push_str("NaN");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
    } else if dtype.is_float() {
        // Debug keeps a decimal point and round-trips, like Python's float repr.
        let _ = write!(out, "{x:?}");
    } else if dtype == DType::Bool {
        out.push_str(if x != 0.0 { "true" } else { "false" });
    } else {
        let _ = write!(out, "{}", x as i128);
    }
}

/// Writes `vals` as nested lists following `shape` (numpy's `tolist()`).
fn emit_nested(vals: &[f64], shape: &[usize], dtype: DType, out: &mut String) {
    match shape.split_first() {
        None => number(vals[0], dtype, out),
        Some((&n, rest)) => {
            let stride: usize = rest.iter().product();
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                emit_nested(&vals[i * stride..(i + 1) * stride], rest, dtype, out);
            }
            out.push(']');
        }
    }
}

/// Rewrites bare `Infinity`, `-Infinity` and `NaN` tokens (outside strings) as strings.
fn quote_non_finite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    let (mut in_str, mut esc) = (false, false);
    while let Some(ch) = rest.chars().next() {
        if !in_str {
            if let Some(tok) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
                out.push('"');
                out.push_str(tok);
                out.push('"');
                rest = &rest[tok.len()..];
                continue;
            }
            in_str = ch == '"';
        } else if esc {
            esc = false;
        } else if ch == '\\' {
            esc = true;
        } else if ch == '"' {
            in_str = false;
        }
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    out
}

fn err(path: &str, message: impl Into<String>) -> Error {
    Error::SpaceJson { path: path.into(), message: message.into() }
}

fn field<'a>(j: &'a Json, key: &str, path: &str) -> Result<&'a Json> {
    j.get(key).ok_or_else(|| err(path, format!("missing field `{key}`")))
}

fn as_i64(j: &Json, path: &str) -> Result<i64> {
    j.as_i64().ok_or_else(|| err(path, format!("expected an integer, got {j}")))
}

fn as_f64(j: &Json, path: &str) -> Result<f64> {
    match j {
        Json::Number(n) => n.as_f64().ok_or_else(|| err(path, "number out of range")),
        Json::Bool(b) => Ok(*b as u8 as f64),
        Json::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Json::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        Json::String(s) if s == "NaN" => Ok(f64::NAN),
        other => Err(err(path, format!("expected a number, got {other}"))),
    }
}

fn int_vec(j: &Json, path: &str) -> Result<Vec<i64>> {
    match j {
        Json::Array(a) => a.iter().map(|x| as_i64(x, path)).collect(),
        Json::Number(_) => Ok(vec![as_i64(j, path)?]),
        other => Err(err(path, format!("expected a list of integers, got {other}"))),
    }
}

fn flatten(j: &Json, path: &str, out: &mut Vec<f64>) -> Result<()> {
    match j {
        Json::Array(a) => a.iter().try_for_each(|x| flatten(x, path, out)),
        other => {
            out.push(as_f64(other, path)?);
            Ok(())
        }
    }
}

fn parse(j: &Json, path: &str) -> Result<Space> {
    let ty = field(j, "type", path)?.as_str().ok_or_else(|| err(path, "`type` must be a string"))?;
    let wrap = |e: Error| match e {
        Error::InvalidSpace(m) => err(path, m),
        other => other,
    };
    match ty {
        "Box" => {
            let dtype = DType::parse(field(j, "dtype", path)?.as_str().unwrap_or("")).map_err(wrap)?;
            let shape: Vec<usize> = int_vec(field(j, "shape", path)?, path)?
                .into_iter()
                .map(|x| usize::try_from(x).map_err(|_| err(path, "negative dimension")))
                .collect::<Result<_>>()?;
            let n = crate::space::element_count(&shape).map_err(wrap)?;
            let (mut low, mut high) = (Vec::new(), Vec::new());
            flatten(field(j, "low", path)?, &format!("{path}.low"), &mut low)?;
            flatten(field(j, "high", path)?, &format!("{path}.high"), &mut high)?;
            // numpy broadcasts scalar bounds; so do we.
            if low.len() == 1 && n != 1 {
                low = vec![low[0]; n];
            }
            if high.len() == 1 && n != 1 {
                high = vec![high[0]; n];
            }
            Space::box_with(dtype, &shape, low, high).map_err(wrap)
        }
        "Discrete" => {
            let n = as_i64(field(j, "n", path)?, path)?;
            let start = j.get("start").map(|s| as_i64(s, path)).transpose()?.unwrap_or(0);
            Space::discrete(u64::try_from(n).map_err(|_| err(path, "n must be positive"))?, start).map_err(wrap)
        }
        "MultiDiscrete" => {
            let nvec = int_vec(field(j, "nvec", path)?, path)?;
            let start = j.get("start").map(|s| int_vec(s, path)).transpose()?.unwrap_or_default();
            Space::multi_discrete(nvec, start).map_err(wrap)
        }
        "MultiBinary" => {
            let shape = int_vec(field(j, "n", path)?, path)?;
            let shape: Vec<usize> =
                shape.into_iter().map(|x| usize::try_from(x).map_err(|_| err(path, "negative n"))).collect::<Result<_>>()?;
            crate::space::element_count(&shape).map_err(wrap)?;
            Ok(Space::MultiBinary { shape })
        }
        "Text" => {
            let len = |key: &str| -> Result<usize> {
                usize::try_from(as_i64(field(j, key, path)?, path)?).map_err(|_| err(path, format!("negative {key}")))
            };
            let charset = field(j, "charset", path)?.as_str().ok_or_else(|| err(path, "`charset` must be a string"))?;
            Space::text(len("min_length")?, len("max_length")?, charset).map_err(wrap)
        }
        "Dict" => {
            let subs = field(j, "subspaces", path)?.as_object().ok_or_else(|| err(path, "`subspaces` must be an object"))?;
            let items =
                subs.iter().map(|(k, v)| Ok((k.clone(), parse(v, &format!("{path}.subspaces.{k}"))?))).collect::<Result<Vec<_>>>()?;
            Space::dict(items).map_err(wrap)
        }
        "Tuple" => {
            let subs = field(j, "subspaces", path)?.as_array().ok_or_else(|| err(path, "`subspaces` must be a list"))?;
            let items = subs.iter().enumerate().map(|(i, v)| parse(v, &format!("{path}.subspaces[{i}]"))).collect::<Result<_>>()?;
            Ok(Space::Tuple(items))
        }
        other => Err(err(path, format!("unknown space type `{other}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    #[test]
    fn cartpole_box_round_trips_with_infinity() {
        let hi = vec![4.8f32 as f64, f64::INFINITY, 0.41887903f32 as f64, f64::INFINITY];
        let lo: Vec<f64> = hi.iter().map(|x| -x).collect();
        let s = Space::box_with(DType::F32, &[4], lo, hi).unwrap();
        let j = s.to_json();
        assert!(j.contains("Infinity"), "{j}");
        assert!(j.starts_with(r#"{"type": "Box", "dtype": "float32", "shape": [4], "low": [-4.800000190734863"#), "{j}");
        assert_eq!(Space::from_json(&j).unwrap(), s);
    }

    #[test]
    fn discrete_matches_minari_shape() {
        let s = Space::discrete(2, 0).unwrap();
        assert_eq!(s.to_json(), r#"{"type": "Discrete", "dtype": "int64", "start": 0, "n": 2}"#);
    }

    #[test]
    fn issue10_huge_or_wrapping_shapes_are_refused_not_allocated() {
        for shape in ["[1000000000000]", "[4294967296, 4294967296]", "[67108865]"] {
            let j = format!(r#"{{"type": "Box", "dtype": "float32", "shape": {shape}, "low": 0.0, "high": 1.0}}"#);
            let e = Space::from_json(&j).unwrap_err().to_string();
            assert!(e.contains("more than"), "{shape}: {e}");
            let j = format!(r#"{{"type": "MultiBinary", "dtype": "int8", "n": {shape}}}"#);
            assert!(Space::from_json(&j).is_err(), "MultiBinary {shape}");
        }
        let ok = r#"{"type": "Box", "dtype": "uint8", "shape": [64, 64, 3], "low": 0, "high": 255}"#;
        assert_eq!(Layout::of(&Space::from_json(ok).unwrap()).row_bytes(), 64 * 64 * 3);
    }

    #[test]
    fn errors_name_the_path() {
        let e = Space::from_json(r#"{"type": "Dict", "subspaces": {"rgb": {"type": "Box"}}}"#).unwrap_err();
        assert!(e.to_string().contains("$.subspaces.rgb"), "{e}");
        assert!(Space::from_json("{").is_err());
        assert!(Space::from_json(r#"{"type": "Nope"}"#).is_err());
    }

    #[test]
    fn infinity_inside_strings_is_left_alone() {
        let s = Space::dict(vec![("Infinity".into(), Space::discrete(3, 0).unwrap())]).unwrap();
        assert_eq!(Space::from_json(&s.to_json()).unwrap(), s);
    }
}
