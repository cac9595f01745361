//! Which model input and output is which, decided by name once per model, and
//! checked against the env's spaces before the run starts.
//!
//! Inputs:
//! - **observations**: for a single-array space, the input named `obs` (or the
//!   model's only input that is not `first` or a state); for a Dict/Tuple space, one
//!   input per leaf it uses, named by the leaf's path (`pov`, `t/_index_0`; `_` may
//!   stand for `/`). Values are cast to the input's element type, so `uint8` pixels
//!   reach a `float32` input as 0–255.
//! - **`first`**: `[n]` (or `[n,1]`), true where an episode starts.
//! - **recurrent state**: every input `state…` with an output `state…_out` (`state`
//!   and `state_out`; `h`/`c` as `state_h`/`state_c`). Each slot's state is the
//!   concatenation of its rows, kept between steps and zeros at an episode's start.
//!
//! Outputs, per action leaf (`action` for a single-array space, the leaf path
//! otherwise): `<leaf>` holds the actions as given; `<leaf>_logits` (or `logits`)
//! holds a Discrete/MultiDiscrete leaf's logits, from which the action is the
//! argmax, or a sample with the episode's own seeded stream. A single-array space
//! with neither name takes the model's first output that is not a state. Every
//! other float output may be recorded as an extra (`extras=[value,logprob]`).
//!
//! A batch axis that the model fixed (exported without `dynamic_axes`) is refused:
//! the run's batch sizes vary.

use rollway_core::{DType, EnvSpec, Layout, LeafKind};

use crate::backend::{Elem, Port};

/// What a model input is fed with.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Feed {
    /// The observation leaf at this index.
    Obs(usize),
    /// The episode-start flags.
    First,
    /// Recurrent state pair `k` of [`Plan::states`].
    State(usize),
}

/// How an action leaf is read from its output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Read {
    /// The values are the actions.
    Given,
    /// The values are logits over each entry's choices.
    Logits,
}

/// A recurrent state: a model input and the output that carries it to the next step.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StatePair {
    pub input: usize,
    pub output: usize,
    /// Where its rows sit in each slot's memory, and how many floats they have.
    pub offset: usize,
    pub width: usize,
}

/// The model's inputs and outputs bound to the env's spaces.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    /// Per model input, in its order.
    pub feeds: Vec<Feed>,
    /// Per action leaf: its output and how to read it.
    pub actions: Vec<(usize, Read)>,
    pub states: Vec<StatePair>,
    /// Floats of recurrent state per slot.
    pub state_width: usize,
    /// Outputs recorded as extras: (output, per-row shape).
    pub extras: Vec<(usize, Vec<usize>)>,
}

/// Why a model does not fit, as one message naming both sides.
pub(crate) type Misfit = String;

/// The leaf's name for binding: `obs`/`action` for a bare array.
fn leaf_name(path: &str, bare: &str) -> String {
    if path.is_empty() {
        bare.to_string()
    } else {
        path.to_string()
    }
}

fn find(ports: &[Port], name: &str) -> Option<usize> {
    ports.iter().position(|p| p.name == name).or_else(|| ports.iter().position(|p| p.name == name.replace('/', "_")))
}

/// Checks `port` against per-row `shape` (after the batch axis); `[]` also takes `[n,1]`.
fn fits(port: &Port, shape: &[usize], what: &str) -> Result<(), Misfit> {
    let want = |s: &[usize]| format!("[n{}]", s.iter().map(|d| format!(",{d}")).collect::<String>());
    if let Some(Some(b)) = port.dims.first() {
        return Err(format!(
            "the model's input or output {} has a fixed batch size {b}; export it with a dynamic batch axis \
             (torch.onnx.export(..., dynamic_axes={{\"{}\": {{0: \"n\"}}}}))",
            port.describe(),
            port.name
        ));
    }
    let rest = port.dims.get(1..).unwrap_or(&[]);
    let same = rest.len() == shape.len() && rest.iter().zip(shape).all(|(d, s)| d.is_none_or(|d| d == *s));
    let scalar = shape.is_empty() && rest.len() == 1 && rest[0].is_none_or(|d| d == 1);
    if port.dims.is_empty() || !(same || scalar) {
        return Err(format!("the model's {} does not fit {what}, which takes {}", port.describe(), want(shape)));
    }
    Ok(())
}

fn numeric(port: &Port) -> Result<(), Misfit> {
    match port.elem {
        Elem::Other(_) => Err(format!("the model's {} has an element type rollway does not feed or read", port.describe())),
        _ => Ok(()),
    }
}

/// Binds `inputs`/`outputs` to `spec`'s spaces; `extras` names the outputs to
/// record (`all` for every float output left over).
pub(crate) fn plan(inputs: &[Port], outputs: &[Port], spec: &EnvSpec, extras: &[String]) -> Result<Plan, Misfit> {
    let ol = Layout::of(&spec.observation_space);
    let al = Layout::of(&spec.action_space);
    let obs_space = spec.observation_space.describe();
    let (states, state_width) = state_pairs(inputs, outputs)?;
    let mut feeds = Vec::with_capacity(inputs.len());
    for (i, port) in inputs.iter().enumerate() {
        numeric(port)?;
        if let Some(k) = states.iter().position(|s| s.input == i) {
            feeds.push(Feed::State(k));
            continue;
        }
        if port.name == "first" {
            fits(port, &[], "the episode-start flags")?;
            feeds.push(Feed::First);
            continue;
        }
        let leaf = ol.leaves().iter().position(|l| {
            let name = leaf_name(&l.path, "obs");
            port.name == name || port.name == name.replace('/', "_")
        });
        let others = inputs.iter().filter(|p| p.name != "first" && !p.name.starts_with("state")).count();
        let leaf = leaf.or((ol.leaves().len() == 1 && others == 1).then_some(0)).ok_or_else(|| {
            let names: Vec<String> = ol.leaves().iter().map(|l| format!("`{}`", leaf_name(&l.path, "obs"))).collect();
            format!(
                "the model's input {} is not fed by anything: the observation space {obs_space} gives {}, \
                 and `first` and `state…` (with a `state…_out` output) are the others",
                port.describe(),
                names.join(", ")
            )
        })?;
        let l = &ol.leaves()[leaf];
        fits(port, &l.shape, &format!("the observation space {obs_space} (leaf `{}`)", leaf_name(&l.path, "obs")))?;
        feeds.push(Feed::Obs(leaf));
    }
    let used: Vec<usize> = states.iter().map(|s| s.output).collect();
    let actions = action_outputs(outputs, &al, &spec.action_space.describe(), &used)?;
    let mut taken = used;
    taken.extend(actions.iter().map(|a| a.0));
    let extras = extra_outputs(outputs, &taken, extras)?;
    Ok(Plan { feeds, actions, states, state_width, extras })
}

/// Every input `state…` with a `state…_out` output, laid out one after another.
fn state_pairs(inputs: &[Port], outputs: &[Port]) -> Result<(Vec<StatePair>, usize), Misfit> {
    let mut pairs = Vec::new();
    let mut offset = 0;
    for (i, port) in inputs.iter().enumerate().filter(|(_, p)| p.name.starts_with("state")) {
        let Some(o) = outputs.iter().position(|q| q.name == format!("{}_out", port.name)) else { continue };
        let out = &outputs[o];
        if port.elem != Elem::F32 || out.elem != Elem::F32 {
            return Err(format!("recurrent state {} → {} must be float32", port.describe(), out.describe()));
        }
        let rest = port.dims.get(1..).unwrap_or(&[]);
        let Some(width) = rest.iter().try_fold(1usize, |w, d| d.map(|d| w * d)) else {
            return Err(format!("recurrent state {} needs fixed sizes after its batch axis", port.describe()));
        };
        fits(port, &rest.iter().map(|d| d.unwrap_or(0)).collect::<Vec<_>>(), "its own state")?;
        fits(out, &rest.iter().map(|d| d.unwrap_or(0)).collect::<Vec<_>>(), &format!("the state input {}", port.describe()))?;
        pairs.push(StatePair { input: i, output: o, offset, width });
        offset += width;
    }
    Ok((pairs, offset))
}

/// The output each action leaf is read from.
fn action_outputs(outputs: &[Port], al: &Layout, space: &str, used: &[usize]) -> Result<Vec<(usize, Read)>, Misfit> {
    let single = al.leaves().len() == 1;
    let mut out = Vec::new();
    for l in al.leaves() {
        let name = leaf_name(&l.path, "action");
        let logits_name = if l.path.is_empty() { "logits".to_string() } else { format!("{name}_logits") };
        let by_name = find(outputs, &name).map(|o| (o, Read::Given)).or_else(|| find(outputs, &logits_name).map(|o| (o, Read::Logits)));
        let guessed = || {
            let o = (0..outputs.len()).find(|o| !used.contains(o))?;
            let p = &outputs[o];
            let discrete = matches!(l.kind, LeafKind::Discrete { .. } | LeafKind::MultiDiscrete { .. });
            let as_logits =
                discrete && matches!(p.elem, Elem::F32 | Elem::F64) && p.dims.len() == l.shape.len() + 2 - usize::from(l.shape.is_empty());
            Some((o, if as_logits { Read::Logits } else { Read::Given }))
        };
        let (o, read) = by_name.or_else(|| if single { guessed() } else { None }).ok_or_else(|| {
            format!("the model has no output for the action {space}: name one `{name}` (actions) or `{logits_name}` (logits)")
        })?;
        let port = &outputs[o];
        numeric(port)?;
        if port.dims.is_empty() {
            // Shape unknown to the model (no inference through its ops): checked per call.
            out.push((o, read));
            continue;
        }
        match (read, &l.kind) {
            (Read::Logits, LeafKind::Discrete { n, .. }) => fits(port, &[*n as usize], &format!("logits of the action space {space}"))?,
            (Read::Logits, LeafKind::MultiDiscrete { nvec, .. }) => {
                let total = nvec.iter().sum::<i64>() as usize;
                fits(port, &[total], &format!("logits of the action space {space} (all entries' logits, one after another)"))?
            }
            (Read::Logits, _) => {
                return Err(format!("the model's {} gives logits, but the action space {space} is not discrete", port.describe()))
            }
            (Read::Given, _) => {
                fits(port, &l.shape, &format!("the action space {space}"))?;
                if port.elem == Elem::Bool && l.dtype != DType::Bool {
                    return Err(format!("the model's {} gives bools for the action space {space}", port.describe()));
                }
            }
        }
        out.push((o, read));
    }
    Ok(out)
}

/// The outputs named in `wanted` (or every float output left over, for `all`).
fn extra_outputs(outputs: &[Port], taken: &[usize], wanted: &[String]) -> Result<Vec<(usize, Vec<usize>)>, Misfit> {
    let all = wanted.iter().any(|w| w == "all");
    let mut picked: Vec<usize> = if all {
        (0..outputs.len()).filter(|o| !taken.contains(o) && matches!(outputs[*o].elem, Elem::F32 | Elem::F64)).collect()
    } else {
        Vec::new()
    };
    for w in wanted.iter().filter(|w| *w != "all") {
        let names: Vec<String> = outputs.iter().map(Port::describe).collect();
        let o = find(outputs, w).ok_or_else(|| format!("extras: the model has no output `{w}` (it has {})", names.join(", ")))?;
        if !picked.contains(&o) {
            picked.push(o);
        }
    }
    picked
        .into_iter()
        .map(|o| {
            let p = &outputs[o];
            if !matches!(p.elem, Elem::F32 | Elem::F64) {
                return Err(format!("extras: the model's {} is not float, and extras are float32 columns", p.describe()));
            }
            let rest = p.dims.get(1..).unwrap_or(&[]);
            let shape = rest
                .iter()
                .map(|d| d.ok_or_else(|| format!("extras: the model's {} has a symbolic size after its batch axis", p.describe())));
            let shape = shape.collect::<Result<Vec<usize>, Misfit>>()?;
            fits(p, &shape, "an extra")?;
            Ok((o, shape))
        })
        .collect()
}
