//! H.264 encoding with libx264. Decoding, and the packet types, are the same for
//! every codec ([`crate::video`]) and are re-exported here.

use ff::Dictionary;
use ffmpeg_next as ff;

use crate::video::{self, Codec, Setup};
pub use crate::video::{decode_range, Decoder, Encoded, Packet};
use crate::Result;

/// Encoder settings. The defaults aim at PyAV's default libx264 output (preset medium,
/// CRF 23, keyframes every 250) in bytes per frame and PSNR at a fraction of the time
/// (bench/RESULTS.md). `keyint` trades size for random access: keyframes cost most of
/// the bytes of rendered frames, and a loader decodes up to `keyint` frames to reach one.
#[derive(Clone, Debug, PartialEq)]
pub struct H264Options {
    /// Constant rate factor (0–51, lower = better quality). x264's default is 23.
    pub crf: f32,
    /// x264 preset (`ultrafast` … `placebo`).
    pub preset: String,
    /// Maximum frames between keyframes; random access decodes at most this many.
    pub keyint: u32,
    /// Frames per second written in the container (timestamps are `frame / fps`).
    pub fps: u32,
    /// Extra `x264-params` (`key=value:key=value`), empty for none.
    pub x264_params: String,
}

impl Default for H264Options {
    fn default() -> Self {
        H264Options { crf: 23.0, preset: "fast".into(), keyint: 128, fps: 30, x264_params: String::new() }
    }
}

/// Encodes `frames` (each `height × width × 3` RGB bytes) into one closed-GOP H.264
/// stream, one packet per frame.
pub fn encode<'a>(frames: impl IntoIterator<Item = &'a [u8]>, width: usize, height: usize, opts: &H264Options) -> Result<Encoded> {
    let mut options = Dictionary::new();
    options.set("preset", &opts.preset);
    options.set("crf", &format!("{}", opts.crf));
    // Keyframes only on the interval, never on scene cuts, so random access cost is bounded
    // and predictable; closed GOPs so decoding can start at any keyframe.
    let mut params = "scenecut=0:open-gop=0".to_string();
    if !opts.x264_params.is_empty() {
        params.push(':');
        params.push_str(&opts.x264_params);
    }
    options.set("x264-params", &params);
    let setup = Setup { codec: Codec::H264, encoder: "libx264", options, fps: opts.fps, keyint: opts.keyint, exclusive: None };
    video::encode(frames, width, height, setup)
}
