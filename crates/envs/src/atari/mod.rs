//! The standard Atari preprocessing, done in Rust over an emulator that only
//! emulates: Gymnasium's `AtariPreprocessing` followed by `FrameStackObservation`.
//!
//! The emulator is ALE (ale-py's `ALEInterface`, driven from the Python binding:
//! see `rollway-python`'s `atari.rs`), seen here through [`Emulator`]: act one
//! frame, read the flags, the lives and the grayscale screen. Everything a
//! Gymnasium wrapper stack would do per agent step in Python is done here per
//! step: the frame skip, the max-pool of the last two frames, the `INTER_AREA`
//! shrink to `size × size` ([`resize`], equal to OpenCV's pixel for pixel), the
//! optional life-loss termination and reward clipping, and the frame stack. The
//! reset's no-ops draw from the env's own numpy generator, so they are left to the
//! caller (the binding runs Gymnasium's reset itself), which then calls
//! [`Frames::reset`].
//!
//! Why the same order as Gymnasium, line for line: a terminal frame inside the
//! skip leaves the screen buffers as they were (stale, and the max-pool still
//! writes into the first), and the stack is padded with the reset frame. Any other
//! order gives other pixels on the last step of an episode, and a learner
//! bootstrapping from it would see a different final observation.

pub mod resize;

/// What [`Frames`] needs of an emulator, one frame at a time.
pub trait Emulator {
    /// Why a call failed (the binding's: a Python exception's text).
    type Error;
    /// Plays `action` (an index into the game's action set) for one frame; its reward.
    fn act(&mut self, action: usize) -> Result<f64, Self::Error>;
    /// `(terminated, truncated)` after the last frame: the game is over, or its frame limit reached.
    fn ended(&mut self) -> Result<(bool, bool), Self::Error>;
    /// Lives left.
    fn lives(&mut self) -> Result<i64, Self::Error>;
    /// The screen in grayscale, `height × width`, into `out`.
    fn screen(&mut self, out: &mut [u8]) -> Result<(), Self::Error>;
}

/// The preprocessing's settings, named as in Gymnasium's wrappers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preprocessing {
    /// Frames each action is repeated for (`frame_skip`); the last two are max-pooled.
    pub frame_skip: usize,
    /// The emulator's screen, `(height, width)`.
    pub screen: (usize, usize),
    /// The side of the square frame the screen is shrunk to (`screen_size`).
    pub size: usize,
    /// Frames stacked into one observation (`FrameStackObservation`'s `stack_size`).
    pub stack: usize,
    /// A lost life ends the episode, and the next reset starts a new game (`terminal_on_life_loss`,
    /// Gymnasium's: checked after each frame).
    pub terminal_on_life_loss: bool,
    /// A lost life ends the episode but not the game (`episodic_life`: Stable-Baselines3's
    /// `EpisodicLifeEnv`, as CleanRL's scripts and EnvPool have it): checked after each agent
    /// step; the next reset plays on from where the life was lost ([`Frames::game_goes_on`]).
    pub episodic_life: bool,
    /// Each step's reward becomes its sign (CleanRL's `ClipRewardEnv`, EnvPool's `reward_clip`).
    pub reward_clip: bool,
}

impl Preprocessing {
    /// Bytes of one observation: `stack × size × size`.
    pub fn obs_bytes(&self) -> usize {
        self.stack * self.frame_bytes()
    }

    fn frame_bytes(&self) -> usize {
        self.size * self.size
    }
}

/// One agent step's outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Step {
    /// Summed over the skipped frames (clipped to its sign with `reward_clip`).
    pub reward: f64,
    /// The game ended (or, with `terminal_on_life_loss` or `episodic_life`, a life was lost).
    pub terminated: bool,
    /// The emulator's frame limit was reached.
    pub truncated: bool,
    /// The game itself ended (over, or its frame limit): not only a life.
    pub game_over: bool,
    /// With `episodic_life`, at the step its game ended: the game's return (raw, every step's
    /// reward before clipping, the reset's FIRE and no-op steps included) and its length in agent
    /// steps, as Gymnasium's `RecordEpisodeStatistics` says them under `EpisodicLifeEnv`.
    pub game: Option<(f64, u64)>,
}

/// One env's preprocessing state: the two screen buffers, the lives, the stack.
#[derive(Clone, Debug)]
pub struct Frames {
    p: Preprocessing,
    area: resize::Area,
    screens: [Vec<u8>; 2],
    lives: i64,
    /// `stack` frames, oldest first: the observation as it is handed out.
    stacked: Vec<u8>,
    /// The last step ended the game itself (or no game was played yet): a reset starts a new one.
    real_done: bool,
    /// The current game's raw return and agent steps so far (`episodic_life`'s statistics).
    game_return: f64,
    game_length: u64,
}

impl Frames {
    /// Buffers for one env under `p`.
    pub fn new(p: Preprocessing) -> Frames {
        let (h, w) = p.screen;
        Frames {
            p,
            area: resize::Area::new(h, w, p.size, p.size),
            screens: [vec![0; h * w], vec![0; h * w]],
            lives: 0,
            stacked: vec![0; p.obs_bytes()],
            real_done: true,
            game_return: 0.0,
            game_length: 0,
        }
    }

    /// The settings.
    pub fn preprocessing(&self) -> &Preprocessing {
        &self.p
    }

    /// After the emulator's reset (and no-ops): the first observation, its frame
    /// repeated `stack` times, into `obs`.
    pub fn reset<E: Emulator>(&mut self, emu: &mut E, obs: &mut [u8]) -> Result<(), E::Error> {
        self.lives = emu.lives()?;
        (self.real_done, self.game_return, self.game_length) = (false, 0.0, 0);
        emu.screen(&mut self.screens[0])?;
        self.screens[1].fill(0);
        let last = self.stacked.len() - self.p.frame_bytes();
        self.shrink(last);
        self.restack(obs);
        Ok(())
    }

    /// Plays `action` for `frame_skip` frames (fewer if the episode ends) and writes
    /// the stacked observation into `obs`.
    pub fn step<E: Emulator>(&mut self, emu: &mut E, action: usize, obs: &mut [u8]) -> Result<Step, E::Error> {
        let skip = self.p.frame_skip;
        let mut out = Step::default();
        for t in 0..skip {
            out.reward += emu.act(action)?;
            (out.terminated, out.truncated) = emu.ended()?;
            out.game_over = out.terminated || out.truncated;
            if self.p.terminal_on_life_loss {
                let lives = emu.lives()?;
                out.terminated |= lives < self.lives;
                self.lives = lives;
            }
            if out.terminated || out.truncated {
                break;
            }
            if t + 2 == skip {
                emu.screen(&mut self.screens[1])?;
            } else if t + 1 == skip {
                emu.screen(&mut self.screens[0])?;
            }
        }
        self.real_done = out.game_over;
        if self.p.episodic_life {
            self.game_return += out.reward;
            self.game_length += 1;
            // EpisodicLifeEnv: after the whole skipped step, a life fewer (and some left) ends the episode.
            let lives = emu.lives()?;
            out.terminated |= 0 < lives && lives < self.lives;
            self.lives = lives;
            out.game = out.game_over.then_some((self.game_return, self.game_length));
        }
        if self.p.reward_clip {
            out.reward = if out.reward > 0.0 {
                1.0
            } else if out.reward < 0.0 {
                -1.0
            } else {
                0.0
            };
        }
        let fb = self.p.frame_bytes();
        self.stacked.copy_within(fb.., 0);
        self.shrink(self.stacked.len() - fb);
        obs.copy_from_slice(&self.stacked);
        Ok(out)
    }

    /// Whether a reset goes on with the game rather than starting a new one: with
    /// `episodic_life`, after an episode that a lost life ended.
    pub fn game_goes_on(&self) -> bool {
        self.p.episodic_life && !self.real_done
    }

    /// `EpisodicLifeEnv`'s reset after a lost life: a NOOP step (whose game may end, then the
    /// caller starts a new one: see `game_over`), the lives read again; the caller pads the stack.
    pub fn go_on<E: Emulator>(&mut self, emu: &mut E, obs: &mut [u8]) -> Result<Step, E::Error> {
        let out = self.step(emu, 0, obs)?;
        self.lives = emu.lives()?;
        Ok(out)
    }

    /// Pads the stack with its newest frame, as `FrameStackObservation` pads a reset's: after
    /// the presses of a FIRE reset, which SB3's `FireResetEnv` plays below the stack.
    pub fn restack(&mut self, obs: &mut [u8]) {
        let fb = self.p.frame_bytes();
        let last = self.stacked.len() - fb;
        let (older, newest) = self.stacked.split_at_mut(last);
        for frame in older.chunks_exact_mut(fb) {
            frame.copy_from_slice(newest);
        }
        obs.copy_from_slice(&self.stacked);
    }

    /// Max-pools the two screens into the first (as Gymnasium does, in place) when
    /// frames are skipped, and shrinks it into the stack's frame at byte `at`.
    fn shrink(&mut self, at: usize) {
        let [first, second] = &mut self.screens;
        if self.p.frame_skip > 1 {
            for (a, b) in first.iter_mut().zip(second.iter()) {
                *a = (*a).max(*b);
            }
        }
        let fb = self.p.frame_bytes();
        self.area.run(first, &mut self.stacked[at..at + fb]);
    }
}

#[cfg(test)]
mod tests;
