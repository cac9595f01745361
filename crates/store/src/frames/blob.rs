//! Frame files made of independent per-frame blobs: `raw` (fixed-size frames back
//! to back) and the blob container used by `lz4` and `jpeg`: the blobs back to
//! back, then a footer of `n+1` little-endian u64 offsets, `n` as u64, and an 8-byte
//! magic naming the codec (`RWLZ4v1\0`, `RWJPGv1\0`). Any frame is one read away.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{Encoded, FrameMedia, FrameShard, Geom};
use crate::error::IoContext;
use crate::{Error, Result};

fn corrupt(path: &Path, m: String) -> Error {
    Error::Corrupt { path: path.to_path_buf(), message: m }
}

fn blobs<'a>(e: &'a Encoded, path: &Path) -> Result<&'a [Vec<u8>]> {
    match e {
        Encoded::Blobs(b) => Ok(b),
        Encoded::H264(_) => Err(corrupt(path, "an H.264 episode handed to a blob writer".into())),
    }
}

/// Writes `parts` to a new file at `path`, fsyncs it, and returns its size.
fn write_file<'a>(path: &Path, parts: impl IntoIterator<Item = &'a [u8]>) -> Result<u64> {
    let mut f = BufWriter::with_capacity(1 << 20, File::create(path).io("creating", path)?);
    for p in parts {
        f.write_all(p).io("writing", path)?;
    }
    let f = f.into_inner().map_err(|e| Error::Io { op: "flushing", path: path.to_path_buf(), source: e.into_error() })?;
    f.sync_all().io("syncing", path)?;
    f.metadata().io("reading size of", path).map(|m| m.len())
}

/// Uncompressed frames back to back.
pub struct Raw;

struct RawShard {
    file: File,
    path: PathBuf,
    frame_bytes: usize,
    n: u64,
}

impl FrameShard for RawShard {
    fn len(&self) -> u64 {
        self.n
    }
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()> {
        self.frames(i, out, self.frame_bytes)
    }
    fn frames(&self, start: u64, out: &mut [u8], frame_bytes: usize) -> Result<()> {
        let count = (out.len() / frame_bytes.max(1)) as u64;
        super::check_range(&self.path, start, count, self.n)?;
        self.file.read_exact_at(out, start * self.frame_bytes as u64).io("reading", &self.path)
    }
}

impl FrameMedia for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }
    fn ext(&self) -> &'static str {
        "raw"
    }
    fn encode(&self, frames: &mut dyn Iterator<Item = &[u8]>, _geom: &Geom) -> Result<Encoded> {
        Ok(Encoded::Blobs(frames.map(|f| f.to_vec()).collect()))
    }
    fn write(&self, path: &Path, _geom: &Geom, episodes: &[&Encoded]) -> Result<u64> {
        let parts = episodes.iter().map(|e| blobs(e, path)).collect::<Result<Vec<_>>>()?;
        write_file(path, parts.into_iter().flatten().map(|b| b.as_slice()))
    }
    fn read(&self, path: &Path, geom: &Geom, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        self.check(path, geom, start, count)?;
        let mut f = File::open(path).io("opening", path)?;
        f.seek(SeekFrom::Start(start * geom.bytes() as u64)).io("seeking", path)?;
        let n = out.len();
        out.resize(n + count as usize * geom.bytes(), 0);
        f.read_exact(&mut out[n..]).io("reading", path)
    }
    fn open(&self, path: &Path, geom: &Geom) -> Result<Box<dyn FrameShard>> {
        let file = File::open(path).io("opening", path)?;
        let len = file.metadata().io("opening", path)?.len();
        Ok(Box::new(RawShard { file, path: path.to_path_buf(), frame_bytes: geom.bytes(), n: len / geom.bytes().max(1) as u64 }))
    }
    fn check(&self, path: &Path, geom: &Geom, start: u64, count: u64) -> Result<()> {
        let len = std::fs::metadata(path).io("opening", path)?.len();
        let need = start.checked_add(count).and_then(|end| end.checked_mul(geom.bytes() as u64));
        if need.is_none_or(|need| len < need) {
            return Err(corrupt(path, format!("{len} bytes, too few for frames {start}..{}", start.saturating_add(count))));
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Codec {
    Lz4,
    Jpeg(u8),
}

/// Per-frame blobs in one container file: `lz4` (lossless) or `jpeg`.
pub struct Blobs {
    codec: Codec,
}

impl Blobs {
    /// LZ4 blocks: lossless, fast.
    pub fn lz4() -> Blobs {
        Blobs { codec: Codec::Lz4 }
    }
    /// JPEG files at `quality`.
    pub fn jpeg(quality: u8) -> Blobs {
        Blobs { codec: Codec::Jpeg(quality) }
    }
    fn magic(&self) -> &'static [u8; 8] {
        match self.codec {
            Codec::Lz4 => b"RWLZ4v1\0",
            Codec::Jpeg(_) => b"RWJPGv1\0",
        }
    }
}

fn decode_blob(codec: Codec, path: &Path, i: u64, blob: &[u8], geom: &Geom, out: &mut [u8]) -> Result<()> {
    match codec {
        Codec::Lz4 => {
            let got = lz4_flex::block::decompress_into(blob, out).map_err(|e| corrupt(path, format!("frame {i}: {e}")))?;
            if got != geom.bytes() {
                return Err(corrupt(path, format!("frame {i} decodes to {got} bytes, expected {}", geom.bytes())));
            }
            Ok(())
        }
        Codec::Jpeg(_) => rollway_media::jpeg::decode(blob, geom.width, geom.height, geom.channels, out)
            .map_err(|e| corrupt(path, format!("frame {i}: {e}"))),
    }
}

/// Reads and checks the footer's offsets table.
fn offsets(path: &Path, magic: &[u8; 8]) -> Result<Vec<u64>> {
    let mut f = File::open(path).io("opening", path)?;
    let len = f.metadata().io("opening", path)?.len();
    if len < 16 {
        return Err(corrupt(path, format!("{len} bytes: too short for a frame file")));
    }
    let mut tail = [0u8; 16];
    f.seek(SeekFrom::Start(len - 16)).io("seeking", path)?;
    f.read_exact(&mut tail).io("reading", path)?;
    if &tail[8..] != magic {
        return Err(corrupt(path, format!("no {} frame footer (truncated?)", String::from_utf8_lossy(&magic[..7]))));
    }
    let n = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
    let table = n
        .checked_add(1)
        .and_then(|k| k.checked_mul(8))
        .filter(|&t| t + 16 <= len)
        .ok_or_else(|| corrupt(path, format!("footer claims {n} frames")))?;
    f.seek(SeekFrom::Start(len - 16 - table)).io("seeking", path)?;
    let mut buf = vec![0u8; table as usize];
    f.read_exact(&mut buf).io("reading", path)?;
    let offs: Vec<u64> = buf.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    if offs[0] != 0 || offs.windows(2).any(|w| w[1] < w[0]) || offs[n as usize] != len - 16 - table {
        return Err(corrupt(path, "frame offsets are inconsistent".into()));
    }
    Ok(offs)
}

/// Frames `start..start+count` exist in a file with these offsets (one more than frames).
fn check_range(path: &Path, offs: &[u64], start: u64, count: u64) -> Result<()> {
    super::check_range(path, start, count, offs.len() as u64 - 1)
}

struct BlobShard {
    file: File,
    path: PathBuf,
    offsets: Vec<u64>,
    codec: Codec,
    geom: Geom,
}

impl FrameShard for BlobShard {
    fn len(&self) -> u64 {
        self.offsets.len() as u64 - 1
    }
    fn frame(&self, i: u64, out: &mut [u8]) -> Result<()> {
        check_range(&self.path, &self.offsets, i, 1)?;
        let (a, b) = (self.offsets[i as usize], self.offsets[i as usize + 1]);
        // Blobs are small; a per-call buffer keeps this `&self` and thread-safe.
        let mut comp = vec![0u8; (b - a) as usize];
        self.file.read_exact_at(&mut comp, a).io("reading", &self.path)?;
        decode_blob(self.codec, &self.path, i, &comp, &self.geom, out)
    }
}

impl FrameMedia for Blobs {
    fn name(&self) -> &'static str {
        match self.codec {
            Codec::Lz4 => "lz4",
            Codec::Jpeg(_) => "jpeg",
        }
    }
    fn ext(&self) -> &'static str {
        match self.codec {
            Codec::Lz4 => "lz4",
            Codec::Jpeg(_) => "jpg",
        }
    }
    fn supports(&self, geom: &Geom) -> Result<()> {
        match self.codec {
            Codec::Jpeg(_) if !matches!(geom.channels, 1 | 3 | 4) => {
                Err(Error::Unsupported(format!("jpeg frames need 1, 3 or 4 channels, not {}", geom.channels)))
            }
            _ => Ok(()),
        }
    }
    fn encode(&self, frames: &mut dyn Iterator<Item = &[u8]>, geom: &Geom) -> Result<Encoded> {
        let mut out = Vec::new();
        match self.codec {
            Codec::Lz4 => {
                for f in frames {
                    out.push(lz4_flex::block::compress(f));
                }
            }
            Codec::Jpeg(q) => {
                let mut enc = rollway_media::jpeg::Encoder::new(q, geom.channels).map_err(|e| Error::Encode(e.to_string()))?;
                for f in frames {
                    out.push(enc.encode(f, geom.width, geom.height, geom.channels).map_err(|e| Error::Encode(e.to_string()))?);
                }
            }
        }
        Ok(Encoded::Blobs(out))
    }
    fn write(&self, path: &Path, _geom: &Geom, episodes: &[&Encoded]) -> Result<u64> {
        let all: Vec<&[u8]> =
            episodes.iter().map(|e| blobs(e, path)).collect::<Result<Vec<_>>>()?.into_iter().flatten().map(|b| b.as_slice()).collect();
        let mut footer = Vec::with_capacity(all.len() * 8 + 24);
        let mut at = 0u64;
        footer.extend_from_slice(&at.to_le_bytes());
        for b in &all {
            at += b.len() as u64;
            footer.extend_from_slice(&at.to_le_bytes());
        }
        footer.extend_from_slice(&(all.len() as u64).to_le_bytes());
        footer.extend_from_slice(self.magic());
        write_file(path, all.into_iter().chain(std::iter::once(footer.as_slice())))
    }
    fn read(&self, path: &Path, geom: &Geom, start: u64, count: u64, out: &mut Vec<u8>) -> Result<()> {
        let offs = offsets(path, self.magic())?;
        check_range(path, &offs, start, count)?;
        let (a, b) = (offs[start as usize], offs[(start + count) as usize]);
        let mut f = File::open(path).io("opening", path)?;
        f.seek(SeekFrom::Start(a)).io("seeking", path)?;
        let mut comp = vec![0u8; (b - a) as usize];
        f.read_exact(&mut comp).io("reading", path)?;
        for i in start..start + count {
            let (s, e) = ((offs[i as usize] - a) as usize, (offs[i as usize + 1] - a) as usize);
            let n = out.len();
            out.resize(n + geom.bytes(), 0);
            decode_blob(self.codec, path, i, &comp[s..e], geom, &mut out[n..])?;
        }
        Ok(())
    }
    fn check(&self, path: &Path, _geom: &Geom, start: u64, count: u64) -> Result<()> {
        check_range(path, &offsets(path, self.magic())?, start, count)
    }
    fn open(&self, path: &Path, geom: &Geom) -> Result<Box<dyn FrameShard>> {
        let offsets = offsets(path, self.magic())?;
        Ok(Box::new(BlobShard {
            file: File::open(path).io("opening", path)?,
            path: path.to_path_buf(),
            offsets,
            codec: self.codec,
            geom: *geom,
        }))
    }
}
