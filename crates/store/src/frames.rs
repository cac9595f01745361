//! Frame stores: image observations live beside the Parquet shards, one file per
//! shard and frame key, so a codec can be swapped without touching the step data.
//! `raw` stores frames back to back, `lz4` compresses each frame losslessly;
//! H.264/JPEG plug in behind the same trait.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::IoContext;
use crate::{Error, Result};

/// Writes one shard's frames for one key.
pub trait FrameWriter: Send {
    /// Appends one frame (`frame_bytes` bytes, H×W×C uint8).
    fn append(&mut self, frame: &[u8]) -> Result<()>;
    /// Flushes and fsyncs; returns the file size.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// A frame codec.
pub trait FrameMedia: Send + Sync {
    /// Name stored in the metadata (`raw`).
    fn name(&self) -> &'static str;
    /// File extension.
    fn ext(&self) -> &'static str;
    /// Starts a frame file.
    fn writer(&self, path: &Path, frame_bytes: usize) -> Result<Box<dyn FrameWriter>>;
    /// Appends frames `start..start+count` to `out`.
    fn read(&self, path: &Path, frame_bytes: usize, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()>;
    /// Checks that frames `start..start+count` are present (cheaply, without decoding everything).
    fn check(&self, path: &Path, frame_bytes: usize, start: u64, count: u64) -> Result<()>;
    /// Opens a shard's frame file for random access from many threads.
    fn open(&self, path: &Path, frame_bytes: usize) -> Result<Box<dyn FrameShard>>;
}

/// Random access to one shard's frames (positional reads: shareable across threads).
pub trait FrameShard: Send + Sync {
    /// Number of frames.
    fn len(&self) -> u64;
    /// True when there are no frames.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Decodes frame `i` into `out` (`frame_bytes` long).
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()>;
}

struct RawShard {
    file: File,
    path: std::path::PathBuf,
    frame_bytes: usize,
    n: u64,
}

impl FrameShard for RawShard {
    fn len(&self) -> u64 {
        self.n
    }
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        if i >= self.n {
            return Err(Error::Corrupt { path: self.path.clone(), message: format!("frame {i} of {}", self.n) });
        }
        self.file.read_exact_at(out, i * self.frame_bytes as u64).io("reading", &self.path)
    }
}

struct Lz4Shard {
    file: File,
    path: std::path::PathBuf,
    offsets: Vec<u64>,
    frame_bytes: usize,
}

impl FrameShard for Lz4Shard {
    fn len(&self) -> u64 {
        self.offsets.len() as u64 - 1
    }
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        if i >= self.len() {
            return Err(Error::Corrupt { path: self.path.clone(), message: format!("frame {i} of {}", self.len()) });
        }
        let (a, b) = (self.offsets[i as usize], self.offsets[i as usize + 1]);
        // Compressed frames are small; a per-call buffer keeps this `&self` and thread-safe.
        let mut comp = vec![0u8; (b - a) as usize];
        self.file.read_exact_at(&mut comp, a).io("reading", &self.path)?;
        let got = lz4_flex::block::decompress_into(&comp, out).map_err(|e| Error::Corrupt { path: self.path.clone(), message: format!("frame {i}: {e}") })?;
        if got != self.frame_bytes {
            return Err(Error::Corrupt { path: self.path.clone(), message: format!("frame {i} decodes to {got} bytes") });
        }
        Ok(())
    }
}

/// Looks up a frame media by name.
pub fn media(name: &str) -> Option<&'static dyn FrameMedia> {
    match name {
        "raw" => Some(&Raw),
        "lz4" => Some(&Lz4),
        _ => None,
    }
}

/// Uncompressed frames back to back.
pub struct Raw;

struct RawWriter {
    file: BufWriter<File>,
    path: std::path::PathBuf,
}

impl FrameWriter for RawWriter {
    fn append(&mut self, frame: &[u8]) -> Result<()> {
        self.file.write_all(frame).io("writing", &self.path)
    }
    fn finish(self: Box<Self>) -> Result<u64> {
        let path = self.path;
        let f = self.file.into_inner().map_err(|e| Error::Io { op: "flushing", path: path.clone(), source: e.into_error() })?;
        f.sync_all().io("syncing", &path)?;
        f.metadata().io("reading size of", &path).map(|m| m.len())
    }
}

impl FrameMedia for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }
    fn ext(&self) -> &'static str {
        "raw"
    }
    fn writer(&self, path: &Path, _frame_bytes: usize) -> Result<Box<dyn FrameWriter>> {
        let file = File::create(path).io("creating", path)?;
        Ok(Box::new(RawWriter { file: BufWriter::with_capacity(1 << 20, file), path: path.to_path_buf() }))
    }
    fn read(&self, path: &Path, frame_bytes: usize, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        self.check(path, frame_bytes, start, count)?;
        let mut f = File::open(path).io("opening", path)?;
        f.seek(SeekFrom::Start(start * frame_bytes as u64)).io("seeking", path)?;
        let n = out.len();
        out.resize(n + count as usize * frame_bytes, 0);
        f.read_exact(&mut out[n..]).io("reading", path)
    }
    fn open(&self, path: &Path, frame_bytes: usize) -> Result<Box<dyn FrameShard>> {
        let file = File::open(path).io("opening", path)?;
        let len = file.metadata().io("opening", path)?.len();
        Ok(Box::new(RawShard { file, path: path.to_path_buf(), frame_bytes, n: len / frame_bytes.max(1) as u64 }))
    }
    fn check(&self, path: &Path, frame_bytes: usize, start: u64, count: u64) -> Result<()> {
        let len = std::fs::metadata(path).io("opening", path)?.len();
        let need = (start + count) * frame_bytes as u64;
        if len < need {
            return Err(Error::Corrupt { path: path.to_path_buf(), message: format!("{len} bytes, frames {start}..{} need {need}", start + count) });
        }
        Ok(())
    }
}

/// Each frame LZ4-compressed on its own (lossless, random access). The file is the
/// compressed frames back to back, then a footer: `n+1` little-endian u64 offsets,
/// `n` as u64, and the magic `RWLZ4v1\0`.
pub struct Lz4;

const LZ4_MAGIC: &[u8; 8] = b"RWLZ4v1\0";

struct Lz4Writer {
    file: BufWriter<File>,
    path: std::path::PathBuf,
    offsets: Vec<u64>,
    scratch: Vec<u8>,
}

impl FrameWriter for Lz4Writer {
    fn append(&mut self, frame: &[u8]) -> Result<()> {
        self.scratch.resize(lz4_flex::block::get_maximum_output_size(frame.len()), 0);
        let n = lz4_flex::block::compress_into(frame, &mut self.scratch).map_err(|e| Error::Corrupt { path: self.path.clone(), message: format!("lz4: {e}") })?;
        self.file.write_all(&self.scratch[..n]).io("writing", &self.path)?;
        let last = *self.offsets.last().expect("starts with 0");
        self.offsets.push(last + n as u64);
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<u64> {
        let mut footer = Vec::with_capacity(self.offsets.len() * 8 + 16);
        self.offsets.iter().for_each(|o| footer.extend_from_slice(&o.to_le_bytes()));
        footer.extend_from_slice(&(self.offsets.len() as u64 - 1).to_le_bytes());
        footer.extend_from_slice(LZ4_MAGIC);
        self.file.write_all(&footer).io("writing", &self.path)?;
        let raw = RawWriter { file: self.file, path: self.path };
        Box::new(raw).finish()
    }
}

impl Lz4 {
    /// Reads the footer's offsets table.
    fn offsets(path: &Path) -> Result<Vec<u64>> {
        let corrupt = |m: String| Error::Corrupt { path: path.to_path_buf(), message: m };
        let mut f = File::open(path).io("opening", path)?;
        let len = f.metadata().io("opening", path)?.len();
        if len < 16 {
            return Err(corrupt(format!("{len} bytes: too short for an lz4 frame file")));
        }
        let mut tail = [0u8; 16];
        f.seek(SeekFrom::Start(len - 16)).io("seeking", path)?;
        f.read_exact(&mut tail).io("reading", path)?;
        if &tail[8..] != LZ4_MAGIC {
            return Err(corrupt("no lz4 frame footer (truncated?)".into()));
        }
        let n = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
        let table = n.checked_add(1).and_then(|k| k.checked_mul(8)).filter(|&t| t + 16 <= len).ok_or_else(|| corrupt(format!("footer claims {n} frames")))?;
        f.seek(SeekFrom::Start(len - 16 - table)).io("seeking", path)?;
        let mut buf = vec![0u8; table as usize];
        f.read_exact(&mut buf).io("reading", path)?;
        let offs: Vec<u64> = buf.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        if offs[0] != 0 || offs.windows(2).any(|w| w[1] < w[0]) || offs[n as usize] != len - 16 - table {
            return Err(corrupt("frame offsets are inconsistent".into()));
        }
        Ok(offs)
    }
}

impl FrameMedia for Lz4 {
    fn name(&self) -> &'static str {
        "lz4"
    }
    fn ext(&self) -> &'static str {
        "lz4"
    }
    fn writer(&self, path: &Path, _frame_bytes: usize) -> Result<Box<dyn FrameWriter>> {
        let file = File::create(path).io("creating", path)?;
        Ok(Box::new(Lz4Writer { file: BufWriter::with_capacity(1 << 20, file), path: path.to_path_buf(), offsets: vec![0], scratch: Vec::new() }))
    }
    fn read(&self, path: &Path, frame_bytes: usize, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        let offs = Self::offsets(path)?;
        self.check_offsets(path, &offs, start, count)?;
        let (a, b) = (offs[start as usize], offs[(start + count) as usize]);
        let mut f = File::open(path).io("opening", path)?;
        f.seek(SeekFrom::Start(a)).io("seeking", path)?;
        let mut comp = vec![0u8; (b - a) as usize];
        f.read_exact(&mut comp).io("reading", path)?;
        for i in start..start + count {
            let (s, e) = ((offs[i as usize] - a) as usize, (offs[i as usize + 1] - a) as usize);
            let n = out.len();
            out.resize(n + frame_bytes, 0);
            let got = lz4_flex::block::decompress_into(&comp[s..e], &mut out[n..]).map_err(|err| Error::Corrupt { path: path.to_path_buf(), message: format!("frame {i}: {err}") })?;
            if got != frame_bytes {
                return Err(Error::Corrupt { path: path.to_path_buf(), message: format!("frame {i} decodes to {got} bytes, expected {frame_bytes}") });
            }
        }
        Ok(())
    }
    fn check(&self, path: &Path, _frame_bytes: usize, start: u64, count: u64) -> Result<()> {
        let offs = Self::offsets(path)?;
        self.check_offsets(path, &offs, start, count)
    }
    fn open(&self, path: &Path, frame_bytes: usize) -> Result<Box<dyn FrameShard>> {
        let offsets = Self::offsets(path)?;
        Ok(Box::new(Lz4Shard { file: File::open(path).io("opening", path)?, path: path.to_path_buf(), offsets, frame_bytes }))
    }
}

impl Lz4 {
    fn check_offsets(&self, path: &Path, offs: &[u64], start: u64, count: u64) -> Result<()> {
        if start + count > offs.len() as u64 - 1 {
            return Err(Error::Corrupt { path: path.to_path_buf(), message: format!("has {} frames, frames {start}..{} asked for", offs.len() - 1, start + count) });
        }
        Ok(())
    }
}
