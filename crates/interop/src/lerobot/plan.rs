//! Which rollway leaf becomes which LeRobot feature (the table in the module docs).

use std::collections::BTreeMap;

use rollway_core::{DType, Layout, Leaf};
use rollway_store::format::{column_name, is_frame_leaf};
use serde_json::{json, Value as Json};

/// One leaf and its feature.
#[derive(Clone, Debug)]
pub(crate) struct Col {
    /// The LeRobot feature name.
    pub name: String,
    /// The rollway column name (`observations/rgb`).
    pub column: String,
    /// Index of the leaf in its layout.
    pub leaf: usize,
    pub dtype: DType,
    /// Elements per row.
    pub len: usize,
    /// `[H, W, 3]` for video leaves.
    pub video: Option<[usize; 3]>,
}

impl Col {
    /// The feature's shape as LeRobot declares it: scalars are `[1]`, arrays flattened.
    pub fn shape(&self) -> Vec<usize> {
        match self.video {
            Some(s) => s.to_vec(),
            None => vec![self.len],
        }
    }

    /// Bytes per row.
    pub fn bytes(&self) -> usize {
        self.len * self.dtype.size()
    }

    /// The `features` entry of `info.json` (videos get their `info` block elsewhere).
    pub fn feature(&self) -> Json {
        let dtype = if self.video.is_some() { "video" } else { self.dtype.name() };
        let names = if self.video.is_some() { json!(["height", "width", "channels"]) } else { Json::Null };
        json!({"dtype": dtype, "shape": self.shape(), "names": names})
    }
}

/// The observation and action columns of a dataset.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub obs: Vec<Col>,
    pub act: Vec<Col>,
}

fn dotted(path: &str) -> String {
    path.replace('/', ".")
}

fn col(prefix: &str, leaf: &Leaf, i: usize, name: String) -> Col {
    let video = is_frame_leaf(leaf).then(|| [leaf.shape[0], leaf.shape[1], leaf.shape[2]]);
    Col { name, column: column_name(prefix, leaf), leaf: i, dtype: leaf.dtype, len: leaf.len(), video }
}

impl Plan {
    /// Names every leaf; `names` (rollway column → feature, from an export's
    /// `meta/rollway.json`) overrides the default naming. Fails on a leaf LeRobot
    /// cannot hold or two leaves with one name.
    pub fn new(obs: &Layout, act: &Layout, names: Option<&BTreeMap<String, String>>) -> Result<Plan, String> {
        let plain = obs.leaves().iter().filter(|l| !is_frame_leaf(l)).count();
        let mut p = Plan { obs: vec![], act: vec![] };
        for (i, leaf) in obs.leaves().iter().enumerate() {
            let name = if is_frame_leaf(leaf) {
                if leaf.shape[2] != 3 {
                    return Err(format!(
                        "image `{}` has {} channels; LeRobot videos are RGB (3)",
                        column_name("observations", leaf),
                        leaf.shape[2]
                    ));
                }
                if leaf.shape[0] % 2 != 0 || leaf.shape[1] % 2 != 0 {
                    return Err(format!(
                        "image `{}` is {}×{}; H.264 (yuv420p) needs even sizes",
                        column_name("observations", leaf),
                        leaf.shape[1],
                        leaf.shape[0]
                    ));
                }
                if leaf.path.is_empty() {
                    "observation.image".to_string()
                } else {
                    format!("observation.images.{}", dotted(&leaf.path))
                }
            } else if plain == 1 {
                "observation.state".to_string()
            } else {
                format!("observation.{}", dotted(&leaf.path))
            };
            p.obs.push(col("observations", leaf, i, name));
        }
        let single = act.leaves().len() == 1;
        for (i, leaf) in act.leaves().iter().enumerate() {
            let name = if single { "action".to_string() } else { format!("action.{}", dotted(&leaf.path)) };
            p.act.push(col("actions", leaf, i, name));
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in p.obs.iter_mut().chain(p.act.iter_mut()) {
            if let Some(n) = names.and_then(|m| m.get(&c.column)) {
                c.name = n.clone();
            }
            if c.len == 0 {
                return Err(format!("`{}` has no elements", c.column));
            }
            if !seen.insert(c.name.clone()) {
                return Err(format!("two leaves map to the feature `{}` (dict keys with dots?)", c.name));
            }
        }
        Ok(p)
    }

    /// rollway column → feature name, as stored in `meta/rollway.json`.
    pub fn names(&self) -> BTreeMap<String, String> {
        self.obs.iter().chain(&self.act).map(|c| (c.column.clone(), c.name.clone())).collect()
    }

    pub fn videos(&self) -> impl Iterator<Item = &Col> {
        self.obs.iter().filter(|c| c.video.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::Space;

    #[test]
    fn names_follow_the_table() {
        let cartpole = Layout::of(&Space::boxed(DType::F32, &[4], -1.0, 1.0).unwrap());
        let discrete = Layout::of(&Space::discrete(2, 0).unwrap());
        let p = Plan::new(&cartpole, &discrete, None).unwrap();
        assert_eq!((p.obs[0].name.as_str(), p.act[0].name.as_str(), p.act[0].shape()), ("observation.state", "action", vec![1]));
        let mine = Layout::of(
            &Space::dict(vec![
                ("inventory".into(), Space::boxed(DType::I32, &[5], 0.0, 9.0).unwrap()),
                ("rgb".into(), Space::boxed(DType::U8, &[32, 32, 3], 0.0, 255.0).unwrap()),
            ])
            .unwrap(),
        );
        let p = Plan::new(&mine, &discrete, None).unwrap();
        assert_eq!(p.obs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["observation.state", "observation.images.rgb"]);
        assert_eq!(p.obs[1].shape(), vec![32, 32, 3]);
        let two = Layout::of(
            &Space::dict(vec![
                ("a".into(), Space::discrete(3, 0).unwrap()),
                ("b".into(), Space::boxed(DType::F64, &[2, 2], 0.0, 1.0).unwrap()),
            ])
            .unwrap(),
        );
        let p = Plan::new(&two, &two, None).unwrap();
        assert_eq!(p.obs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["observation.a", "observation.b"]);
        assert_eq!(p.act.iter().map(|c| (c.name.as_str(), c.len)).collect::<Vec<_>>(), [("action.a", 1), ("action.b", 4)]);
        let clash = Layout::of(
            &Space::dict(vec![
                ("a.b".into(), Space::discrete(3, 0).unwrap()),
                ("a".into(), Space::dict(vec![("b".into(), Space::discrete(3, 0).unwrap())]).unwrap()),
            ])
            .unwrap(),
        );
        assert!(Plan::new(&clash, &discrete, None).unwrap_err().contains("two leaves"));
        let gray = Layout::of(&Space::boxed(DType::U8, &[16, 16, 1], 0.0, 255.0).unwrap());
        assert!(Plan::new(&gray, &discrete, None).unwrap_err().contains("channels"));
    }
}
