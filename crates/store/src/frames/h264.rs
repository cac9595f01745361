//! `h264`: one mp4 per shard and frame key, episodes back to back, every episode
//! starting on a keyframe and keyframes every `keyint` frames after that. A window
//! of frames costs one seek to the keyframe before it plus at most `keyint` frames
//! decoded ahead of it. Decoders are kept per shard and reused across calls.
//!
//! The codec's 4:2:0 chroma needs even sides: a frame with an odd side (Craftax-Classic's
//! 63×63) is stored padded by one repeated column or row, and cropped back when read, so
//! readers see the dataset's own frame size.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rollway_media::h264::{decode_range, encode, Decoder, H264Options};
use rollway_media::mp4::{self, Video};

use super::{codec_err, Encoded, FrameMedia, FrameShard, Geom};
use crate::{Error, Result};

/// H.264 in mp4 through FFmpeg (libx264).
pub struct H264 {
    pub(super) opts: H264Options,
}

/// The stored video's size: the frame's, each side rounded up to even.
fn padded(geom: &Geom) -> (usize, usize) {
    (geom.width + geom.width % 2, geom.height + geom.height % 2)
}

/// `frame` (RGB, `geom`) padded to even sides by repeating its last column and row.
fn pad(frame: &[u8], geom: &Geom, out: &mut Vec<u8>) {
    let (w2, h2) = padded(geom);
    let row = geom.width * 3;
    out.clear();
    for y in 0..h2 {
        let src = &frame[y.min(geom.height - 1) * row..][..row];
        out.extend_from_slice(src);
        if w2 > geom.width {
            out.extend_from_slice(&src[row - 3..]);
        }
    }
}

/// Calls `f` with a decoded (padded) frame cropped to `geom`, or as it is when unpadded.
fn cropped(rgb: &[u8], geom: &Geom, buf: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])) {
    let (w2, h2) = padded(geom);
    if (w2, h2) == (geom.width, geom.height) {
        return f(rgb);
    }
    buf.clear();
    for y in 0..geom.height {
        buf.extend_from_slice(&rgb[y * w2 * 3..][..geom.width * 3]);
    }
    f(buf)
}

fn frames_of(path: &Path, geom: &Geom) -> Result<Video> {
    let v = mp4::read(path).map_err(|e| codec_err(path, e))?;
    if (v.width, v.height) != padded(geom) {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            message: format!("video is {}×{}, the dataset's frames are {}×{}", v.width, v.height, geom.width, geom.height),
        });
    }
    Ok(v)
}

fn check_count(path: &Path, v: &Video, start: u64, count: u64) -> Result<()> {
    super::check_range(path, start, count, v.frames() as u64)
}

impl FrameMedia for H264 {
    fn name(&self) -> &'static str {
        "h264"
    }
    fn ext(&self) -> &'static str {
        "mp4"
    }
    fn supports(&self, geom: &Geom) -> Result<()> {
        if geom.channels != 3 {
            return Err(Error::Unsupported(format!(
                "h264 stores RGB frames; this key is {}×{}×{} (use lz4, raw or jpeg)",
                geom.height, geom.width, geom.channels
            )));
        }
        Ok(())
    }
    fn encode(&self, frames: &mut dyn Iterator<Item = &[u8]>, geom: &Geom) -> Result<Encoded> {
        let (w2, h2) = padded(geom);
        let encoded = if (w2, h2) == (geom.width, geom.height) {
            encode(frames, w2, h2, &self.opts)
        } else {
            let padded: Vec<Vec<u8>> = frames
                .map(|f| {
                    let mut out = Vec::with_capacity(w2 * h2 * 3);
                    pad(f, geom, &mut out);
                    out
                })
                .collect();
            encode(padded.iter().map(|f| &f[..]), w2, h2, &self.opts)
        };
        encoded.map(Encoded::H264).map_err(|e| Error::Encode(e.to_string()))
    }
    fn write(&self, path: &Path, geom: &Geom, episodes: &[&Encoded]) -> Result<u64> {
        let streams = episodes
            .iter()
            .map(|e| match e {
                Encoded::H264(s) => Ok(s),
                Encoded::Blobs(_) => Err(Error::Encode("a blob episode handed to the mp4 writer".into())),
            })
            .collect::<Result<Vec<_>>>()?;
        let (w2, h2) = padded(geom);
        mp4::write(path, w2, h2, self.opts.fps, &streams).map_err(|e| codec_err(path, e))?;
        // libavformat closed the file; make it durable before the commit renames it.
        let f = std::fs::File::open(path).map_err(|e| Error::Io { op: "opening", path: path.to_path_buf(), source: e })?;
        f.sync_all().map_err(|e| Error::Io { op: "syncing", path: path.to_path_buf(), source: e })?;
        f.metadata().map(|m| m.len()).map_err(|e| Error::Io { op: "reading size of", path: path.to_path_buf(), source: e })
    }
    fn read(&self, path: &Path, geom: &Geom, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        let v = frames_of(path, geom)?;
        check_count(path, &v, start, count)?;
        let (w2, h2) = padded(geom);
        let mut dec = Decoder::new(v.codec, &v.extradata, w2, h2).map_err(|e| codec_err(path, e))?;
        out.reserve(count as usize * geom.bytes());
        let mut buf = Vec::new();
        decode_range(&mut dec, &v.packets, start as i64, (start + count) as i64, &mut |_, rgb| {
            cropped(rgb, geom, &mut buf, &mut |f| out.extend_from_slice(f));
            Ok(())
        })
        .map_err(|e| codec_err(path, e))
    }
    fn check(&self, path: &Path, geom: &Geom, start: u64, count: u64) -> Result<()> {
        check_count(path, &frames_of(path, geom)?, start, count)
    }
    fn open(&self, path: &Path, geom: &Geom) -> Result<Box<dyn FrameShard>> {
        let video = frames_of(path, geom)?;
        Ok(Box::new(H264Shard { video, path: path.to_path_buf(), geom: *geom, idle: Mutex::new(Vec::new()) }))
    }
}

/// A decoder that only one thread uses at a time (it sits in the shard's idle list
/// between calls).
struct Owned(Decoder);
// SAFETY: FFmpeg decoder and scaler contexts may move between threads; they are
// never used by two threads at once (taken out of the mutex-guarded list to use).
unsafe impl Send for Owned {}

struct H264Shard {
    video: Video,
    path: PathBuf,
    geom: Geom,
    /// Decoders not in use: opening one costs more than decoding a few frames.
    idle: Mutex<Vec<Owned>>,
}

impl H264Shard {
    /// An idle decoder, preferring the one that stopped closest before `from` (it can
    /// continue instead of seeking back to a keyframe).
    fn decoder(&self, from: i64) -> Result<Owned> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let best =
            idle.iter().enumerate().max_by_key(|(_, d)| d.0.position().filter(|&p| p <= from).map_or(i64::MIN, |p| p)).map(|(i, _)| i);
        if let Some(i) = best {
            return Ok(idle.swap_remove(i));
        }
        drop(idle);
        let (w2, h2) = padded(&self.geom);
        Decoder::new(self.video.codec, &self.video.extradata, w2, h2).map(Owned).map_err(|e| codec_err(&self.path, e))
    }
}

impl FrameShard for H264Shard {
    fn len(&self) -> u64 {
        self.video.frames() as u64
    }
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()> {
        self.frames(i, out, self.geom.bytes())
    }
    fn frames(&self, start: u64, out: &mut [u8], frame_bytes: usize) -> Result<()> {
        let count = (out.len() / frame_bytes.max(1)) as u64;
        check_count(&self.path, &self.video, start, count)?;
        let mut d = self.decoder(start as i64)?;
        let mut k = 0usize;
        let mut buf = Vec::new();
        let geom = self.geom;
        let r = decode_range(&mut d.0, &self.video.packets, start as i64, (start + count) as i64, &mut |_, rgb| {
            cropped(rgb, &geom, &mut buf, &mut |f| out[k * frame_bytes..(k + 1) * frame_bytes].copy_from_slice(f));
            k += 1;
            Ok(())
        });
        // A decoder that failed may hold a broken state: drop it instead of reusing it.
        if r.is_ok() {
            self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(d);
        }
        r.map_err(|e| codec_err(&self.path, e))
    }
}
