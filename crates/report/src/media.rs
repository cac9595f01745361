//! Frames for the page: JPEG thumbnails and short H.264 clips of a few episodes,
//! inlined as `data:` URIs so the report is one file that opens from disk.
//!
//! Cost: a clip decodes its episode's frames once (one run of frames, not a seek
//! per frame) and re-encodes at most [`ReportMedia::clip_frames`] of them: about
//! 0.2 s an episode of 1000 frames at 128×128, most of it decoding. Frames
//! are re-encoded rather than cut out of the dataset's own files because those
//! may be lz4, raw or JPEG, and an mp4 shard holds many episodes.

use base64::Engine;
use rollway_media::{h264, jpeg, mp4};
use rollway_store::format::IndexEntry;
use rollway_store::Dataset;

use crate::error::{Error, Result};

/// How much of each episode the page shows.
#[derive(Clone, Debug)]
pub struct ReportMedia {
    /// Thumbnails per episode, spread over its length.
    pub thumbs: usize,
    /// Most frames in a clip; longer episodes are shown as an even time-lapse.
    pub clip_frames: usize,
}

impl Default for ReportMedia {
    fn default() -> Self {
        ReportMedia { thumbs: 8, clip_frames: 300 }
    }
}

/// A frame key's `(height, width, channels)`.
pub fn geometry(ds: &Dataset, key: &str) -> Option<(usize, usize, usize)> {
    let leaf = ds.frame_leaf(key)?;
    Some((leaf.shape[0], leaf.shape[1], leaf.shape[2]))
}

/// Up to `n` indices into `0..len`, evenly spread (first and last included when n ≥ 2).
pub fn spread(len: usize, n: usize) -> Vec<usize> {
    match (len, n) {
        (0, _) | (_, 0) => vec![],
        (len, n) if len <= n => (0..len).collect(),
        (len, 1) => vec![len / 2],
        (len, n) => (0..n).map(|i| i * (len - 1) / (n - 1)).collect(),
    }
}

/// One episode's frames, decoded as RGB.
pub struct Frames {
    pub rgb: Vec<Vec<u8>>,
    pub height: usize,
    pub width: usize,
    /// Every how many frames of the episode one was kept.
    pub every: usize,
}

/// Reads `e`'s frames for `key`, keeping at most `most` evenly spaced ones.
pub fn read(ds: &Dataset, key: &str, e: &IndexEntry, most: usize) -> Result<Frames> {
    let (height, width, channels) = geometry(ds, key).unwrap_or((0, 0, 3));
    let Some(at) = e.frames.get(key) else { return Ok(Frames { rgb: vec![], height, width, every: 1 }) };
    let shard = ds.open_frames(key, e.shard)?;
    let size = height * width * channels;
    let mut all = vec![0u8; size * at.count as usize];
    shard.frames(at.start, &mut all, size)?;
    let every = (at.count as usize).div_ceil(most.max(1)).max(1);
    let rgb = all.chunks_exact(size.max(1)).step_by(every).map(|f| to_rgb(f, channels)).collect();
    Ok(Frames { rgb, height, width, every })
}

fn to_rgb(frame: &[u8], channels: usize) -> Vec<u8> {
    match channels {
        3 => frame.to_vec(),
        1 => frame.iter().flat_map(|&g| [g, g, g]).collect(),
        c => frame.chunks_exact(c).flat_map(|p| [p[0], p[1], p[2]]).collect(),
    }
}

/// `n` JPEG thumbnails spread over `f`, as `data:` URIs.
pub fn thumbnails(f: &Frames, n: usize, episode: u64) -> Result<Vec<String>> {
    let media = |source| Error::Media { op: "encoding thumbnails", episode, source };
    let mut enc = jpeg::Encoder::new(85, 3).map_err(media)?;
    spread(f.rgb.len(), n)
        .into_iter()
        .map(|i| {
            let bytes = enc.encode(&f.rgb[i], f.width, f.height, 3).map_err(media)?;
            Ok(data_uri("image/jpeg", &bytes))
        })
        .collect()
}

/// `f` as an H.264 mp4 at `fps`, as a `data:` URI (odd sizes lose their last row
/// or column: yuv420p needs even ones).
pub fn clip(f: &Frames, fps: u32, episode: u64) -> Result<String> {
    let media = |source| Error::Media { op: "encoding a clip", episode, source };
    let (w, h) = (f.width & !1, f.height & !1);
    let cropped: Vec<Vec<u8>> =
        f.rgb.iter().map(|fr| fr.chunks_exact(f.width * 3).take(h).flat_map(|row| &row[..w * 3]).copied().collect()).collect();
    let opts = h264::H264Options { crf: 26.0, preset: "fast".into(), keyint: 60, fps, x264_params: String::new() };
    let enc = h264::encode(cropped.iter().map(Vec::as_slice), w, h, &opts).map_err(media)?;
    let dir = tempfile::tempdir().map_err(|source| Error::Io { op: "creating a scratch folder", path: std::env::temp_dir(), source })?;
    let path = dir.path().join("clip.mp4");
    mp4::write(&path, w, h, fps, &[&enc]).map_err(media)?;
    let bytes = std::fs::read(&path).map_err(|source| Error::Io { op: "reading", path: path.clone(), source })?;
    Ok(data_uri("video/mp4", &bytes))
}

fn data_uri(mime: &str, bytes: &[u8]) -> String {
    format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_keeps_the_ends_and_never_repeats() {
        assert_eq!(spread(10, 3), [0, 4, 9]);
        assert_eq!(spread(3, 8), [0, 1, 2]);
        assert_eq!(spread(5, 1), [2]);
        assert!(spread(0, 4).is_empty() && spread(4, 0).is_empty());
        let s = spread(1000, 8);
        assert!(s.windows(2).all(|w| w[0] < w[1]) && s[7] == 999);
    }

    #[test]
    fn grey_and_rgba_frames_become_rgb() {
        assert_eq!(to_rgb(&[7, 9], 1), [7, 7, 7, 9, 9, 9]);
        assert_eq!(to_rgb(&[1, 2, 3, 255, 4, 5, 6, 0], 4), [1, 2, 3, 4, 5, 6]);
    }
}
