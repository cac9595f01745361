//! The wire between a worker thread and its env process, shared by both ends.
//!
//! Bulk data never goes through the pipe: actions, observations, rewards and flags
//! sit in the shared [`crate::shm::Region`]. The pipe carries frames (a 4-byte
//! little-endian length, then the payload): once at setup a JSON [`Setup`] and the
//! pickled env factory, answered by a [`Hello`]; then per round a one-byte command,
//! answered by a frame that is empty unless the round produced errors or infos
//! ([`RoundReply`], JSON). A round thus costs two small writes and two reads, and
//! the process end of the pipe doubles as a death notice: a dead process reads as
//! end of file.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use rollway_core::Info;
use serde::{Deserialize, Serialize};

/// Command: run the ops written in the region.
pub const ROUND: u8 = b'g';
/// Command: close the envs and exit.
pub const QUIT: u8 = b'q';

/// Largest frame either end accepts (a reply full of rich infos stays far below).
pub const MAX_FRAME: usize = 1 << 30;

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame; `None` at a clean end of file (the other end is gone).
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes")));
    }
    // Grown as bytes arrive, so a corrupt length costs no up-front allocation.
    let mut buf = Vec::new();
    r.take(len as u64).read_to_end(&mut buf)?;
    if buf.len() != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("frame cut short: {} of {len} bytes", buf.len())));
    }
    Ok(Some(buf))
}

/// What the env process is to host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Setup {
    /// `gym:ID`, `module:callable`, or (with a pickled factory following) a display name.
    pub target: String,
    /// Keyword arguments for the factory, as given (`env_params`); the process parses
    /// each as JSON where it can (`500`, `true`, `0.5`), else keeps the text.
    pub params: BTreeMap<String, String>,
    /// True when the next frame holds the factory, pickled with cloudpickle.
    pub pickled: bool,
    /// Env slots; 0 only reads the spec. A process that answered such a setup waits for
    /// another: a block's, which it then serves (its factory is not sent again).
    pub n: usize,
    /// The shared region's file, when `n > 0`.
    pub shm: Option<String>,
    /// Which infos rounds return: `none`, `final` or `all`.
    pub infos: String,
    /// The run's own episode limit: with `final`, the step that reaches it returns its info too.
    #[serde(default)]
    pub cut: Option<u64>,
}

/// The env's spec, as the process read it from its first env.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpecJson {
    /// `env.spec.id`, or the env's class name.
    pub id: String,
    /// Space JSON (Minari's).
    pub observation_space: String,
    /// Space JSON (Minari's).
    pub action_space: String,
    /// From `env.spec`.
    pub max_episode_steps: Option<u64>,
    /// `env.metadata["render_fps"]`.
    pub render_fps: Option<u32>,
    /// From `env.spec`.
    pub reward_threshold: Option<f64>,
    /// `env.spec.to_json()`, where Gymnasium made the env and its spec serializes.
    #[serde(default)]
    pub gymnasium: Option<String>,
    /// A multi-agent env's possible agents, its rows (`rollway.multiagent`).
    #[serde(default)]
    pub agents: Option<Vec<String>>,
}

impl SpecJson {
    /// The spec, its spaces parsed; errors name `env` and which space.
    pub fn to_spec(&self, env: &str) -> rollway_core::Result<rollway_core::EnvSpec> {
        let space = |what: &str, json: &str| {
            rollway_core::Space::from_json(json)
                .map_err(|e| rollway_core::Error::Env { env: env.to_string(), message: format!("{what} space: {e}") })
        };
        Ok(rollway_core::EnvSpec {
            id: self.id.clone(),
            observation_space: space("observation", &self.observation_space)?,
            action_space: space("action", &self.action_space)?,
            max_episode_steps: self.max_episode_steps,
            render_fps: self.render_fps,
            reward_threshold: self.reward_threshold,
            gymnasium_spec: self.gymnasium.clone(),
            agents: self.agents.clone(),
        })
    }
}

/// The answer to a [`Setup`]: the spec, or why the env could not be made.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Hello {
    /// Set when the env was made.
    pub spec: Option<SpecJson>,
    /// Set when it was not.
    pub error: Option<String>,
}

/// What a round produced besides the region's contents, by slot.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RoundReply {
    /// The exception of each failed op.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<usize, String>,
    /// Infos asked for by [`Setup::infos`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub infos: BTreeMap<usize, Info>,
}

impl RoundReply {
    /// Nothing to say: the reply frame stays empty.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty() && self.infos.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_end_of_file_is_none() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").unwrap();
        write_frame(&mut buf, b"").unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap().as_deref(), Some(&b"hello"[..]));
        assert_eq!(read_frame(&mut r).unwrap().as_deref(), Some(&b""[..]));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        // A frame cut short is an error, not a silent end.
        let mut cut = &buf[..6];
        assert!(read_frame(&mut cut).is_err());
    }

    #[test]
    fn oversized_frames_are_refused() {
        let len = (MAX_FRAME as u32 + 1).to_le_bytes();
        assert!(read_frame(&mut &len[..]).is_err());
    }
}
