//! String key=value parameters for envs and agents (`--env-opt size=64`), with
//! typed getters whose errors name the parameter.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::{Error, Result};

/// Parameters given to an env or agent factory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params(pub BTreeMap<String, String>);

impl Params {
    /// No parameters.
    pub fn new() -> Params {
        Params::default()
    }

    /// Parses `k=v,k=v` (empty string → no parameters). Commas inside brackets
    /// belong to the value, so `action=[0.5,1]` is one parameter.
    pub fn parse(s: &str) -> Result<Params> {
        let mut p = Params::new();
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0i32, 0);
        for (i, c) in s.char_indices() {
            match c {
                '[' | '{' | '(' => depth += 1,
                ']' | '}' | ')' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        for part in parts.into_iter().map(str::trim).filter(|x| !x.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| Error::Param { name: part.into(), message: "expected key=value".into() })?;
            p.0.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(p)
    }

    /// Sets a parameter (builder style).
    pub fn with(mut self, k: &str, v: impl ToString) -> Params {
        self.0.insert(k.into(), v.to_string());
        self
    }

    /// The parameter parsed as `T`, or `default` when absent.
    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        match self.0.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e: T::Err| Error::Param { name: name.into(), message: format!("`{v}`: {e}") }),
        }
    }

    /// The raw string of a parameter.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Fails on any key not in `known`, so typos do not pass silently.
    pub fn expect_only(&self, known: &[&str]) -> Result<()> {
        match self.0.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(Error::Param { name: k.clone(), message: format!("unknown parameter (known: {})", known.join(", ")) }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_inside_brackets_stay_in_the_value() {
        let p = Params::parse("action=[0.5,1], size=64").unwrap();
        assert_eq!(p.raw("action"), Some("[0.5,1]"));
        assert_eq!(p.get("size", 0u32).unwrap(), 64);
        assert!(Params::parse("novalue").is_err());
    }
}
