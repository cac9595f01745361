//! Frame stores: image observations live beside the Parquet shards, one file per
//! shard and frame key, so a codec can be swapped without touching the step data.
//!
//! Writing is split in two so codecs run off the writer thread: [`FrameMedia::encode`]
//! turns one episode's frames into bytes (on the encoder pool, episodes in parallel)
//! and [`FrameMedia::write`] lays a shard's encoded episodes into one file at commit.
//! Media: `raw` (frames back to back), `lz4` and `jpeg` (one blob per frame in a
//! `blob` file) and `h264` (one mp4 per shard, `h264`); each frame key may use
//! its own ([`media_name_for`]).

mod blob;
mod h264;

use std::path::Path;
use std::sync::Arc;

use rollway_core::Leaf;
pub use rollway_media::h264::H264Options;

use crate::{Error, Result};

/// Shape of one frame leaf (H×W×C uint8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geom {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels (1, 3 or 4).
    pub channels: usize,
}

impl Geom {
    /// The geometry of a frame leaf.
    pub fn of(leaf: &Leaf) -> Geom {
        let s = &leaf.shape;
        Geom { height: s.first().copied().unwrap_or(0), width: s.get(1).copied().unwrap_or(0), channels: s.get(2).copied().unwrap_or(1) }
    }
    /// Bytes of one frame.
    pub fn bytes(&self) -> usize {
        self.height * self.width * self.channels
    }
}

/// One episode's frames, encoded.
#[derive(Debug)]
pub enum Encoded {
    /// One self-contained blob per frame (raw, lz4, jpeg).
    Blobs(Vec<Vec<u8>>),
    /// An H.264 stream, one packet per frame.
    H264(rollway_media::h264::Encoded),
}

/// Encoder settings for the lossy media.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameOptions {
    /// JPEG quality, 1–100.
    pub jpeg_quality: u8,
    /// H.264 settings.
    pub h264: H264Options,
}

impl Default for FrameOptions {
    fn default() -> Self {
        // Quality 95 keeps pixel-art tiles crisp; Pillow's default (75) blurs their edges.
        FrameOptions { jpeg_quality: 95, h264: H264Options::default() }
    }
}

/// A frame codec and its file layout.
pub trait FrameMedia: Send + Sync {
    /// Name stored in the metadata (`raw`).
    fn name(&self) -> &'static str;
    /// File extension.
    fn ext(&self) -> &'static str;
    /// Refuses frame shapes the codec cannot store (before anything is written).
    fn supports(&self, geom: &Geom) -> Result<()> {
        let _ = geom;
        Ok(())
    }
    /// Encodes one episode's frames, in order.
    fn encode(&self, frames: &mut dyn Iterator<Item = &[u8]>, geom: &Geom) -> Result<Encoded>;
    /// Writes one shard's file from its episodes, in order; fsyncs; returns its size.
    fn write(&self, path: &Path, geom: &Geom, episodes: &[&Encoded]) -> Result<u64>;
    /// Appends frames `start..start+count` to `out`.
    fn read(&self, path: &Path, geom: &Geom, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()>;
    /// Checks that frames `start..start+count` are present (cheaply, without decoding everything).
    fn check(&self, path: &Path, geom: &Geom, start: u64, count: u64) -> Result<()>;
    /// Opens a shard's frame file for random access from many threads.
    fn open(&self, path: &Path, geom: &Geom) -> Result<Box<dyn FrameShard>>;
}

/// Random access to one shard's frames (shareable across threads).
pub trait FrameShard: Send + Sync {
    /// Number of frames.
    fn len(&self) -> u64;
    /// True when there are no frames.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Decodes frame `i` into `out` (one frame long).
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()>;
    /// Decodes the consecutive frames starting at `start` that fill `out`. Video
    /// overrides this: one seek per run of frames instead of one per frame.
    fn frames(&self, start: u64, out: &mut [u8], frame_bytes: usize) -> Result<()> {
        for (k, chunk) in out.chunks_exact_mut(frame_bytes.max(1)).enumerate() {
            self.frame(start + k as u64, chunk)?;
        }
        Ok(())
    }
}

/// Names of the frame media, for help texts and errors.
pub const MEDIA_NAMES: &str = "lz4, raw, jpeg, h264";

/// The media `name` with encoder settings `opts` (used when writing).
pub fn media_with(name: &str, opts: &FrameOptions) -> Option<Arc<dyn FrameMedia>> {
    Some(match name {
        "raw" => Arc::new(blob::Raw),
        "lz4" => Arc::new(blob::Blobs::lz4()),
        "jpeg" => Arc::new(blob::Blobs::jpeg(opts.jpeg_quality)),
        "h264" => Arc::new(h264::H264 { opts: opts.h264.clone() }),
        _ => return None,
    })
}

/// The media `name` with default settings (enough to read any file of it).
pub fn media(name: &str) -> Option<Arc<dyn FrameMedia>> {
    media_with(name, &FrameOptions::default())
}

/// The media name a `frame_media` setting gives frame key `key`. The setting is one
/// name for every key (`h264`) or a list of `key=name` with an optional bare name as
/// the default (`lz4,observations/rgb=h264`); keys it does not name get `lz4`.
pub fn media_name_for<'a>(setting: &'a str, key: &str) -> &'a str {
    let mut default = "lz4";
    for part in setting.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some((k, name)) if k.trim() == key => return name.trim(),
            Some(_) => {}
            None => default = part,
        }
    }
    default
}

/// Frames `start..start+count` of a file holding `frames` frames: checked arithmetic,
/// so a corrupt index naming frames past the end is an error, never a panic. Every
/// media's reader asks here.
pub(crate) fn check_range(path: &Path, start: u64, count: u64, frames: u64) -> Result<()> {
    if start.checked_add(count).is_none_or(|end| end > frames) {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            message: format!("has {frames} frames, frames {start}..{} asked for", start.saturating_add(count)),
        });
    }
    Ok(())
}

/// The media, with settings `opts`, that a `frame_media` setting gives frame key `key`.
pub fn media_for(setting: &str, key: &str, opts: &FrameOptions) -> Option<Arc<dyn FrameMedia>> {
    media_with(media_name_for(setting, key), opts)
}

/// Checks a `frame_media` setting: every name known, every named key one of `keys`.
pub fn check_setting(setting: &str, keys: &[String]) -> std::result::Result<(), String> {
    for part in setting.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, name) = part.split_once('=').map_or((None, part), |(k, n)| (Some(k.trim()), n.trim()));
        if media(name).is_none() {
            return Err(format!("`{name}` is not a frame media (known: {MEDIA_NAMES})"));
        }
        if let Some(k) = key {
            if !keys.iter().any(|x| x == k) {
                return Err(format!(
                    "`{k}` is not a frame key of this env (its frame keys: {})",
                    if keys.is_empty() { "none".to_string() } else { keys.join(", ") }
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn codec_err(path: &Path, e: rollway_media::Error) -> Error {
    Error::Corrupt { path: path.to_path_buf(), message: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_settings_name_a_default_and_per_key_choices() {
        assert_eq!(media_name_for("h264", "observations/rgb"), "h264");
        assert_eq!(media_name_for("", "observations/rgb"), "lz4");
        let s = "raw, observations/rgb=h264 ,observations/depth=lz4";
        assert_eq!(media_name_for(s, "observations/rgb"), "h264");
        assert_eq!(media_name_for(s, "observations/depth"), "lz4");
        assert_eq!(media_name_for(s, "observations/other"), "raw");
        let keys = vec!["observations/rgb".to_string()];
        assert!(check_setting("observations/rgb=jpeg", &keys).is_ok());
        assert!(check_setting("observations/rgb=gif", &keys).unwrap_err().contains("gif"));
        assert!(check_setting("observations/nope=h264", &keys).unwrap_err().contains("observations/nope"));
    }
}
