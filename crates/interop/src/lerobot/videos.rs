//! The export's videos: each episode's frames of each video key are encoded on the
//! encoder pool (`rollway_media::pool`), several episodes at once, and packed into
//! mp4 files in episode order.
//!
//! Why a read-ahead window: an episode's place in a file (which file, from which
//! timestamp) depends on the encoded sizes of the episodes before it, so results
//! are settled strictly in order; while the oldest episode encodes, the exporter
//! reads and submits up to `window` more. The window (twice the pool's threads)
//! bounds the frames held in memory to that many episodes.
//!
//! Cost: encoding is nearly all of an export's time for image datasets; SVT-AV1
//! (LeRobot's default) spends several times x264's time per frame, so `h264` is
//! the choice when export speed matters more than file size.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crossbeam_channel::{bounded, Receiver};
use rollway_media::av1::{self, Av1Options};
use rollway_media::h264::{self, H264Options};
use rollway_media::pool::Pool;
use rollway_media::video::{Codec, Encoded};
use serde_json::Value as Json;

use super::meta;
use super::plan::Col;
use super::stats::Stats;
use super::ExportOptions;
use crate::error::IoContext;
use crate::{Error, Result};

/// How every episode is encoded: one setting for the whole export, so episodes
/// can share files (the muxer checks that their parameter sets agree).
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub codec: Codec,
    pub crf: f32,
    pub keyint: u32,
    pub fps: u32,
}

impl Settings {
    /// The export's settings: the codec's own defaults (LeRobot's for AV1) unless given.
    pub fn of(opts: &ExportOptions) -> std::result::Result<Settings, String> {
        let (crf, keyint, max) = match opts.video_codec {
            Codec::Av1 => (30.0, 2, 63.0),
            _ => (23.0, 32, 51.0),
        };
        let s = Settings { codec: opts.video_codec, crf: opts.crf.unwrap_or(crf), keyint: opts.keyint.unwrap_or(keyint), fps: opts.fps };
        if !(0.0..=max).contains(&s.crf) || s.keyint == 0 {
            return Err(format!("{} needs crf in 0..={max} and a positive keyint", s.codec.name()));
        }
        if !super::WRITES.contains(&s.codec) {
            return Err(format!("rollway reads {} but does not write it; choose one of {}", s.codec.name(), writable()));
        }
        Ok(s)
    }

    fn encode(&self, pixels: &[u8], w: usize, h: usize) -> rollway_media::Result<Encoded> {
        let frames = pixels.chunks_exact(h * w * 3);
        match self.codec {
            Codec::Av1 => {
                let o = Av1Options { crf: self.crf.round() as u32, keyint: self.keyint, fps: self.fps, ..Default::default() };
                av1::encode(frames, w, h, &o)
            }
            _ => h264::encode(frames, w, h, &H264Options { crf: self.crf, keyint: self.keyint, fps: self.fps, ..Default::default() }),
        }
    }

    /// The `info` block LeRobot's `get_video_info` records for a video feature.
    pub fn info(&self, h: usize, w: usize) -> Json {
        serde_json::json!({
            "video.height": h,
            "video.width": w,
            "video.codec": self.codec.name(),
            "video.pix_fmt": "yuv420p",
            "video.is_depth_map": false,
            "video.fps": self.fps,
            "video.channels": 3,
            "video.g": self.keyint,
            "video.crf": self.crf,
            "has_audio": false,
        })
    }
}

/// The codecs an export writes, for messages.
pub(crate) fn writable() -> String {
    super::WRITES.map(Codec::name).join(", ")
}

/// The mp4 file being filled for one video key.
struct VideoFile {
    col: Col,
    at: (u64, u64),
    pending: Vec<Encoded>,
    frames: u64,
    bytes: u64,
    files: u64,
}

/// Where an episode's frames of one key went: `(chunk, file)`, from and to timestamps.
pub(crate) type Placed = ((u64, u64), f64, f64);

/// An episode whose frames are encoding: one receiver per video key.
struct InFlight {
    episode: usize,
    frames: usize,
    results: Vec<Receiver<rollway_media::Result<(Encoded, Stats)>>>,
}

/// Every video key's files, and the episodes encoding for them.
pub(crate) struct Videos {
    root: PathBuf,
    settings: Settings,
    file_limit: u64,
    episodes_per_file: Option<u64>,
    chunks_size: u64,
    files: Vec<VideoFile>,
    pool: Option<Pool>,
    in_flight: VecDeque<InFlight>,
}

impl Videos {
    /// The videos of `cols` under `root`; the encoder pool starts only when there are any.
    pub fn new(root: &Path, cols: Vec<Col>, settings: Settings, opts: &ExportOptions) -> Result<Videos> {
        let pool = if cols.is_empty() { None } else { Some(Pool::start(opts.encode_threads).io("starting encoder threads", root)?) };
        Ok(Videos {
            root: root.to_path_buf(),
            settings,
            file_limit: opts.video_file_size_in_mb * 1_000_000,
            episodes_per_file: opts.episodes_per_file,
            chunks_size: opts.chunks_size,
            files: cols.into_iter().map(|col| VideoFile { col, at: (0, 0), pending: vec![], frames: 0, bytes: 0, files: 0 }).collect(),
            pool,
            in_flight: VecDeque::new(),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The video columns, in key order.
    pub fn cols(&self) -> impl Iterator<Item = &Col> {
        self.files.iter().map(|f| &f.col)
    }

    /// mp4 files written so far.
    pub fn files_written(&self) -> u64 {
        self.files.iter().map(|f| f.files).sum()
    }

    /// Starts encoding episode `episode`'s `n` frames of every key (`pixels[v]` for
    /// key `v`); then settles the oldest episodes beyond the read-ahead window
    /// through `place(episode, key, placed, stats)`.
    pub fn submit(&mut self, episode: usize, n: usize, pixels: Vec<Vec<u8>>, place: &mut dyn FnMut(usize, Placed, Stats)) -> Result<()> {
        let Some(pool) = &self.pool else { return Ok(()) };
        let mut results = Vec::new();
        for (f, px) in self.files.iter().zip(pixels) {
            let [h, w, _] = f.col.video.expect("video columns have a frame shape");
            let (tx, rx) = bounded(1);
            let settings = self.settings.clone();
            pool.run(Box::new(move || {
                let r = settings.encode(&px, w, h).map(|e| (e, Stats::of_frames(&px, n)));
                let _ = tx.send(r);
            }));
            results.push(rx);
        }
        self.in_flight.push_back(InFlight { episode, frames: n, results });
        let window = 2 * pool.threads();
        while self.in_flight.len() > window {
            self.settle(place)?;
        }
        Ok(())
    }

    /// Settles every episode still encoding and writes the last files.
    pub fn finish(&mut self, place: &mut dyn FnMut(usize, Placed, Stats)) -> Result<()> {
        while !self.in_flight.is_empty() {
            self.settle(place)?;
        }
        for v in 0..self.files.len() {
            self.flush(v)?;
        }
        Ok(())
    }

    /// Waits for the oldest episode's encodings and queues them for their files.
    fn settle(&mut self, place: &mut dyn FnMut(usize, Placed, Stats)) -> Result<()> {
        let Some(job) = self.in_flight.pop_front() else { return Ok(()) };
        for (v, rx) in job.results.into_iter().enumerate() {
            let path = self.path(v);
            let (enc, stats) = rx
                .recv()
                .map_err(|_| Error::Io {
                    op: "encoding (an encoder thread died)",
                    path: path.clone(),
                    source: std::io::ErrorKind::Other.into(),
                })?
                .map_err(|source| Error::Video { path, source })?;
            let placed = self.add(v, enc, job.frames)?;
            place(job.episode, placed, stats);
        }
        Ok(())
    }

    /// Queues an encoded episode for the current mp4 of key `v`, starting a new
    /// file first when this one is full.
    fn add(&mut self, v: usize, enc: Encoded, n: usize) -> Result<Placed> {
        let bytes: u64 = enc.packets.iter().map(|p| p.data.len() as u64).sum();
        let f = &self.files[v];
        let full = f.bytes + bytes >= self.file_limit || self.episodes_per_file.is_some_and(|m| f.pending.len() as u64 >= m);
        if !f.pending.is_empty() && full {
            self.flush(v)?;
            let f = &mut self.files[v];
            f.at = meta::next_file(f.at, self.chunks_size);
        }
        let f = &mut self.files[v];
        let fps = f64::from(self.settings.fps);
        let span = (f.frames as f64 / fps, (f.frames + n as u64) as f64 / fps);
        f.frames += n as u64;
        f.bytes += bytes;
        f.pending.push(enc);
        Ok((f.at, span.0, span.1))
    }

    fn path(&self, v: usize) -> PathBuf {
        let f = &self.files[v];
        self.root.join(meta::fill(meta::VIDEO_PATH, Some(&f.col.name), f.at.0, f.at.1).expect("our template"))
    }

    fn flush(&mut self, v: usize) -> Result<()> {
        if self.files[v].pending.is_empty() {
            return Ok(());
        }
        let path = self.path(v);
        let dir = path.parent().expect("templated paths have directories");
        std::fs::create_dir_all(dir).io("creating", dir)?;
        let f = &mut self.files[v];
        let [h, w, _] = f.col.video.expect("video columns have a frame shape");
        let refs: Vec<&Encoded> = f.pending.iter().collect();
        rollway_media::mp4::write(&path, w, h, self.settings.fps, &refs).map_err(|source| Error::Video { path: path.clone(), source })?;
        (f.pending, f.frames, f.bytes) = (vec![], 0, 0);
        f.files += 1;
        Ok(())
    }
}
