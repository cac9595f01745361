//! `h264`: one mp4 per shard and frame key, episodes back to back, every episode
//! starting on a keyframe and keyframes every `keyint` frames after that. A window
//! of frames costs one seek to the keyframe before it plus at most `keyint` frames
//! decoded ahead of it. Decoders are kept per shard and reused across calls.
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

fn frames_of(path: &Path, geom: &Geom) -> Result<Video> {
    let v = mp4::read(path).map_err(|e| codec_err(path, e))?;
    if (v.width, v.height) != (geom.width, geom.height) {
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
        if geom.channels != 3 || !geom.width.is_multiple_of(2) || !geom.height.is_multiple_of(2) {
            return Err(Error::Unsupported(format!(
                "h264 stores RGB frames with even sides; this key is {}×{}×{} (use lz4, raw or jpeg)",
                geom.height, geom.width, geom.channels
            )));
        }
        Ok(())
    }
    fn encode(&self, frames: &mut dyn Iterator<Item = &[u8]>, geom: &Geom) -> Result<Encoded> {
        encode(frames, geom.width, geom.height, &self.opts).map(Encoded::H264).map_err(|e| Error::Encode(e.to_string()))
    }
    fn write(&self, path: &Path, geom: &Geom, episodes: &[&Encoded]) -> Result<u64> {
        let streams = episodes
            .iter()
            .map(|e| match e {
                Encoded::H264(s) => Ok(s),
                Encoded::Blobs(_) => Err(Error::Encode("a blob episode handed to the mp4 writer".into())),
            })
            .collect::<Result<Vec<_>>>()?;
        mp4::write(path, geom.width, geom.height, self.opts.fps, &streams).map_err(|e| codec_err(path, e))?;
        // libavformat closed the file; make it durable before the commit renames it.
        let f = std::fs::File::open(path).map_err(|e| Error::Io { op: "opening", path: path.to_path_buf(), source: e })?;
        f.sync_all().map_err(|e| Error::Io { op: "syncing", path: path.to_path_buf(), source: e })?;
        f.metadata().map(|m| m.len()).map_err(|e| Error::Io { op: "reading size of", path: path.to_path_buf(), source: e })
    }
    fn read(&self, path: &Path, geom: &Geom, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        let v = frames_of(path, geom)?;
        check_count(path, &v, start, count)?;
        let mut dec = Decoder::new(v.codec, &v.extradata, geom.width, geom.height).map_err(|e| codec_err(path, e))?;
        out.reserve(count as usize * geom.bytes());
        decode_range(&mut dec, &v.packets, start as i64, (start + count) as i64, &mut |_, rgb| {
            out.extend_from_slice(rgb);
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
        Decoder::new(self.video.codec, &self.video.extradata, self.geom.width, self.geom.height)
            .map(Owned)
            .map_err(|e| codec_err(&self.path, e))
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
        let r = decode_range(&mut d.0, &self.video.packets, start as i64, (start + count) as i64, &mut |_, rgb| {
            out[k * frame_bytes..(k + 1) * frame_bytes].copy_from_slice(rgb);
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
