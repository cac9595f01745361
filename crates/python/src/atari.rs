//! `atari:GAME` envs of one block: ale-py's emulator driven from Rust, the
//! preprocessing in `rollway_envs::atari` (see `rollway/_atari.py` for the settings).
//!
//! Per agent step this is `frame_skip` calls of `ALEInterface.act` and one or two
//! of `game_over`, two of `getScreenGrayscale` (into numpy buffers kept per slot),
//! and no Gymnasium wrapper at all: a few microseconds next to the ~200 µs the
//! emulator itself takes for four frames. A reset (seeding, no-ops) runs the
//! package's `Game.reset`, i.e. Gymnasium's own code, once an episode.

use std::ops::Range;

use numpy::{PyArray2, PyArray3, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rollway_core::{Info, InfoNeed, Layout, StepOutcome};
use rollway_envs::atari::{Emulator, Frames, Preprocessing};
use rollway_host::proto::SpecJson;

use crate::slots::{layouts, Driven, DrivenEnvs, DrivenSlot, Episodes};

/// The ALE calls one slot's steps make, bound once.
struct Ale {
    obj: Py<PyAny>,
    act: Py<PyAny>,
    game_over: Py<PyAny>,
    game_truncated: Py<PyAny>,
    lives: Py<PyAny>,
    grayscale: Py<PyAny>,
    screen: Py<PyArray2<u8>>,
    /// `getScreenRGB` and its buffer, when the observations carry the RGB screen.
    rgb: Option<(Py<PyAny>, Py<PyArray3<u8>>)>,
    /// The game's action set, as the ints `act` takes.
    actions: Vec<i64>,
}

impl Ale {
    /// The RGB screen (`env.render()`'s frame) into `out`, when the observations carry it.
    fn rgb(&self, py: Python<'_>, out: &mut [u8]) -> PyResult<()> {
        if let Some((read, buffer)) = &self.rgb {
            let buffer = buffer.bind(py);
            read.bind(py).call1((buffer,))?;
            out.copy_from_slice(buffer.readonly().as_slice()?);
        }
        Ok(())
    }
}

/// Where an observation row's parts lie: the stack, and the RGB screen when
/// `render_mode="rgb_array"` adds it (a Dict of `observation` and `render`).
#[derive(Clone)]
struct Places {
    stack: Range<usize>,
    screen: Option<Range<usize>>,
}

impl Places {
    fn of(ol: &Layout) -> PyResult<Places> {
        let range = |key: &str| ol.leaf_index(key).map(|i| ol.leaves()[i].range());
        match (range("observation"), range("render")) {
            (Some(stack), Some(screen)) => Ok(Places { stack, screen: Some(screen) }),
            _ if ol.leaves().len() == 1 => Ok(Places { stack: 0..ol.row_bytes(), screen: None }),
            _ => Err(crate::errors::input_error("atari: an observation is a stack, or a Dict of the stack and the screen")),
        }
    }
}

pub(crate) struct Slot {
    env: Py<PyAny>,
    ale: Ale,
    frames: Frames,
}

/// The [`Emulator`] of one slot while the GIL is held.
struct Emu<'a, 'py> {
    py: Python<'py>,
    ale: &'a Ale,
}

impl Emulator for Emu<'_, '_> {
    type Error = PyErr;

    fn act(&mut self, action: usize) -> PyResult<f64> {
        self.ale.act.bind(self.py).call1((self.ale.actions[action],))?.extract()
    }

    fn ended(&mut self) -> PyResult<(bool, bool)> {
        // One call when the game goes on (most frames): `game_over()` counts the frame limit too.
        if !self.ale.game_over.bind(self.py).call0()?.extract::<bool>()? {
            return Ok((false, false));
        }
        let kwargs = PyDict::new(self.py);
        kwargs.set_item("with_truncation", false)?;
        let terminated = self.ale.game_over.bind(self.py).call((), Some(&kwargs))?.extract()?;
        Ok((terminated, self.ale.game_truncated.bind(self.py).call0()?.extract()?))
    }

    fn lives(&mut self) -> PyResult<i64> {
        self.ale.lives.bind(self.py).call0()?.extract()
    }

    fn screen(&mut self, out: &mut [u8]) -> PyResult<()> {
        let screen = self.ale.screen.bind(self.py);
        self.ale.grayscale.bind(self.py).call1((screen,))?;
        out.copy_from_slice(screen.readonly().as_slice()?);
        Ok(())
    }
}

impl DrivenSlot for Slot {
    fn env(&self) -> &Py<PyAny> {
        &self.env
    }
}

/// One block's `atari:` envs (`slots.stepper` is the package's `Game`).
pub(crate) struct AtariEnvs {
    slots: Driven<Slot>,
    p: Preprocessing,
    places: Places,
    /// `fire_reset` on a game with FIRE (`Game.fires`): each reset presses FIRE, then action 2.
    fire: bool,
    episodes: Episodes,
    ol: Layout,
    al: Layout,
    id: String,
}

impl AtariEnvs {
    /// `n` slots from what `prepare` returned for an `atari:` target:
    /// `(game, first_env, spec_json, None, None, dump_info)`.
    pub fn new(prepared: &Bound<'_, PyTuple>, spec: &SpecJson, n: usize, infos: InfoNeed, cut: Option<u64>) -> PyResult<AtariEnvs> {
        let game = prepared.get_item(0)?;
        let options = game.getattr("options")?;
        let option = |k: &str| options.get_item(k);
        let first = prepared.get_item(1)?;
        let (_, _, (w, h)): (Py<PyAny>, Vec<i64>, (usize, usize)) = game.call_method1("parts", (&first,))?.extract()?;
        let p = Preprocessing {
            frame_skip: option("frame_skip")?.extract()?,
            screen: (h, w),
            size: option("screen_size")?.extract()?,
            stack: option("stack_size")?.extract()?,
            terminal_on_life_loss: option("terminal_on_life_loss")?.extract()?,
            episodic_life: option("episodic_life")?.extract()?,
            reward_clip: option("reward_clip")?.extract()?,
        };
        let fire = game.call_method1("fires", (&first,))?.extract()?;
        let (ol, al) = layouts(spec)?;
        let places = Places::of(&ol)?;
        Ok(AtariEnvs {
            slots: Driven::new(prepared, n)?,
            p,
            places,
            fire,
            episodes: Episodes::new(n, infos, cut),
            ol,
            al,
            id: spec.id.clone(),
        })
    }

    fn slot(game: &Bound<'_, PyAny>, p: Preprocessing, rgb: bool, env: Py<PyAny>) -> PyResult<Slot> {
        let py = game.py();
        let (ale, actions, _): (Bound<'_, PyAny>, Vec<i64>, (usize, usize)) = game.call_method1("parts", (&env,))?.extract()?;
        let (h, w) = p.screen;
        let method = |name: &str| ale.getattr(name).map(Bound::unbind);
        let ale = Ale {
            obj: ale.clone().unbind(),
            act: method("act")?,
            game_over: method("game_over")?,
            game_truncated: method("game_truncated")?,
            lives: method("lives")?,
            grayscale: method("getScreenGrayscale")?,
            screen: PyArray2::<u8>::zeros(py, [h, w], false).unbind(),
            rgb: match rgb {
                true => Some((method("getScreenRGB")?, PyArray3::<u8>::zeros(py, [h, w, 3], false).unbind())),
                false => None,
            },
            actions,
        };
        Ok(Slot { env, ale, frames: Frames::new(p) })
    }
}

crate::slots::driven_parts!(AtariEnvs);

impl DrivenEnvs for AtariEnvs {
    fn step_one(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> PyResult<(StepOutcome, Option<Info>)> {
        let s = self.slots.get(slot)?;
        let a = i64::from_ne_bytes(act.try_into().map_err(|_| crate::errors::input_error("action row"))?);
        let index = usize::try_from(a).ok().filter(|&i| i < s.ale.actions.len());
        let index = index.ok_or_else(|| crate::errors::input_error(format!("action {a} is outside Discrete({})", s.ale.actions.len())))?;
        let out = s.frames.step(&mut Emu { py, ale: &s.ale }, index, &mut obs[self.places.stack.clone()])?;
        if let Some(at) = self.places.screen.clone() {
            s.ale.rgb(py, &mut obs[at])?;
        }
        self.episodes.stepped(slot);
        let mut info = if self.episodes.info_wanted(slot, out.terminated || out.truncated) { Some(step_info(py, &s.ale)?) } else { None };
        if let (Some(info), Some((r, l))) = (info.as_mut(), out.game) {
            // The whole game's statistics, as `RecordEpisodeStatistics` under `EpisodicLifeEnv` says them.
            info.0.insert("episode".into(), serde_json::json!({"r": r, "l": l}));
        }
        Ok((StepOutcome { reward: out.reward, terminated: out.terminated, truncated: out.truncated }, info))
    }

    fn reset_one(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> PyResult<Option<Info>> {
        let game = self.slots.stepper.clone_ref(py).into_bound(py);
        let (p, places) = (self.p, self.places.clone());
        let s = self.slots.for_reset(py, slot, seed, |env| AtariEnvs::slot(&game, p, places.screen.is_some(), env))?;
        let stack = places.stack;
        let emu = &mut Emu { py, ale: &s.ale };
        let mut info = begin(&game, &s.env, seed, &mut s.frames, emu, &mut obs[stack.clone()])?;
        if self.fire {
            // SB3's FireResetEnv (CleanRL's): FIRE, then action 2, each a whole skipped step whose
            // reward is dropped; an episode that ends meanwhile is reset again (with `episodic_life`,
            // a lost life plays on). The stack starts from the last step's frame.
            for action in [1, 2] {
                let out = s.frames.step(emu, action, &mut obs[stack.clone()])?;
                if out.terminated || out.truncated {
                    info = begin(&game, &s.env, seed, &mut s.frames, emu, &mut obs[stack.clone()])?.or(info);
                }
            }
        }
        // A new game's reset padded the stack already; after FIRE or a life's NOOP step it starts from the last frame.
        let stepped = self.fire || info.is_none();
        if stepped {
            s.frames.restack(&mut obs[stack]);
        }
        if let Some(at) = places.screen {
            s.ale.rgb(py, &mut obs[at])?;
        }
        // The lives and frame numbers after the presses (or the life's NOOP step), not before them.
        let now = if stepped { Some(step_info(py, &s.ale)?) } else { None };
        if !self.episodes.started(slot) {
            return Ok(None);
        }
        let mut info = match info {
            Some(info) => self.slots.info(&info)?,
            None => Info::new(),
        };
        info.0.extend(now.into_iter().flat_map(|i| i.0));
        Ok(Some(info))
    }
}

/// A new game (the package's `Game.reset`: Gymnasium's reset and no-ops; its info), or with
/// `episodic_life` after a lost life the same game played on (`EpisodicLifeEnv`'s reset: a NOOP
/// step; `None`), unless that step ends the game.
fn begin<'py>(
    game: &Bound<'py, PyAny>,
    env: &Py<PyAny>,
    seed: Option<u64>,
    frames: &mut Frames,
    emu: &mut Emu<'_, 'py>,
    obs: &mut [u8],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if frames.game_goes_on() && !frames.go_on(emu, obs)?.game_over {
        return Ok(None);
    }
    let info = game.call_method1("reset", (env, seed))?;
    frames.reset(emu, obs)?;
    Ok(Some(info))
}

/// The info Gymnasium's AtariEnv gives with each step.
fn step_info(py: Python<'_>, ale: &Ale) -> PyResult<Info> {
    let mut info = Info::new();
    let obj = ale.obj.bind(py);
    for (key, method) in [("lives", "lives"), ("episode_frame_number", "getEpisodeFrameNumber"), ("frame_number", "getFrameNumber")] {
        info.0.insert(key.into(), obj.call_method0(method)?.extract::<i64>()?.into());
    }
    Ok(info)
}
