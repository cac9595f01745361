//! TensorBoard scalars for a training loop: the per-fragment stats a rollout
//! reports, written as an event file TensorBoard reads while it grows (CleanRL's,
//! SB3's and Sample Factory's convention: `tensorboard --logdir DIR`).
//!
//! The format is TensorFlow's record file of `Event` protocol buffers, which needs
//! no TensorFlow and no protobuf library for what we write: each record is its
//! length (u64, little-endian), the masked CRC-32C of those 8 bytes, the bytes of
//! one `Event`, and their masked CRC-32C. An `Event` here is either the header
//! (`wall_time`, `file_version: "brain.Event:2"`) or `wall_time`, `step` and a
//! `Summary` of `simple_value` scalars, one per tag, all of a fragment's stats in
//! one record. Cost: encoding a dozen scalars and one buffered `write` per
//! fragment, flushed so that TensorBoard sees it at once (14 µs a fragment with
//! the package's Python around it: bench/RESULTS.md, "Training logs").
//!
//! A resumed run's log starts over at the steps its replay committed, below the last
//! step the killed life logged. So that its curves do not step back, a resumed log's
//! file starts with TensorBoard's purge marker, as `SummaryWriter(purge_step=)`
//! writes it: an event at that step holding `session_log { status: START }`, on
//! which TensorBoard's Python loader drops every event of the directory at that step or
//! later that it read before (the killed life's uncommitted tail). TensorBoard's fast loader
//! (the Rust data server plain `tensorboard --logdir` runs) ignores that marker: it drops a
//! series' points only from the step of a new point of that series on, so the killed life's
//! points between the resume step and the resumed life's first point would stay. So the
//! resumed life also cuts that tail out of the earlier event files rollway wrote in the
//! directory (each rewritten whole and renamed over itself; a file of another writer is
//! never touched): a TensorBoard started after the resume shows the same curve whichever
//! loader it runs, and one that was running keeps its loader's own behaviour. Cost: one read
//! and, where a tail is cut, one write of the earlier files, at resume only.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, InputContext, Result};

/// An event file being written in a log directory.
pub struct EventFile {
    path: PathBuf,
    out: BufWriter<File>,
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// A length-delimited field (wire type 2).
fn bytes_field(buf: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(buf, field << 3 | 2);
    varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// `Event.wall_time` (field 1, a double).
fn wall_time(buf: &mut Vec<u8>, seconds: f64) {
    buf.push(1 << 3 | 1);
    buf.extend_from_slice(&seconds.to_le_bytes());
}

/// The largest `<seconds>` among the event files already in `dir` (`events.out.tfevents.<seconds>.…`).
fn latest_file_seconds(dir: &Path) -> Option<u64> {
    let files = std::fs::read_dir(dir).ok()?;
    files.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("events.out.tfevents.")?.split('.').next()?.parse().ok()).max()
}

/// `Event.step` (field 2, a varint: two's complement for negatives, as protobuf's int64).
fn step_field(buf: &mut Vec<u8>, step: i64) {
    buf.push(2 << 3);
    varint(buf, step as u64);
}

fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

impl EventFile {
    /// Creates `dir` if needed and a new event file in it, named as TensorBoard's
    /// writers name theirs (`events.out.tfevents.<seconds>.<host>.<pid>`); with
    /// `purge_step`, the file starts with the purge marker at that step (see the module docs).
    pub fn create(dir: &Path, now: f64, purge_step: Option<i64>) -> Result<EventFile> {
        let at = || format!("log_dir={}", dir.display());
        std::fs::create_dir_all(dir).input(at)?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "host".into());
        // TensorBoard reads a directory's files in name order: a file made in the same second as an
        // earlier one (a quick resume) is named a second later, so it is read after it.
        let seconds = latest_file_seconds(dir).map_or(now as u64, |s| (now as u64).max(s + 1));
        let path = dir.join(format!("events.out.tfevents.{seconds}.{host}.{}.rollway", std::process::id()));
        if let Some(step) = purge_step {
            cut_tails(dir, step)?;
        }
        let out = BufWriter::new(File::create(&path).input(at)?);
        let mut f = EventFile { path, out };
        let mut header = Vec::new();
        wall_time(&mut header, now);
        bytes_field(&mut header, 3, b"brain.Event:2");
        f.record(&header)?;
        if let Some(step) = purge_step {
            let mut purge = Vec::new();
            wall_time(&mut purge, now);
            step_field(&mut purge, step);
            bytes_field(&mut purge, 7, &[1 << 3, 1]); // session_log { status: START (1) }
            f.record(&purge)?;
        }
        Ok(f)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One event at `step` (the x axis: env steps so far, by convention) holding the
    /// scalars `values` (tag, value), written and flushed.
    pub fn scalars(&mut self, step: i64, now: f64, values: &[(&str, f64)]) -> Result<()> {
        let mut summary = Vec::new();
        for (tag, value) in values {
            let mut v = Vec::with_capacity(tag.len() + 8);
            bytes_field(&mut v, 1, tag.as_bytes());
            v.push(2 << 3 | 5); // simple_value: a float (wire type 5)
            v.extend_from_slice(&(*value as f32).to_le_bytes());
            bytes_field(&mut summary, 1, &v);
        }
        let mut event = Vec::with_capacity(summary.len() + 24);
        wall_time(&mut event, now);
        step_field(&mut event, step);
        bytes_field(&mut event, 5, &summary);
        self.record(&event)
    }

    fn record(&mut self, data: &[u8]) -> Result<()> {
        let mut rec = Vec::with_capacity(data.len() + 16);
        encode_record(&mut rec, data);
        let written = self.out.write_all(&rec).and_then(|()| self.out.flush());
        written.map_err(|source| Error::Log { path: self.path.clone(), source })
    }
}

/// Appends to `out` one record holding `data`: its length, the length's masked CRC, the
/// bytes and their masked CRC.
fn encode_record(out: &mut Vec<u8>, data: &[u8]) {
    let len = (data.len() as u64).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc(data).to_le_bytes());
}

/// The events of an event file's bytes, up to the first record cut short (a writer killed
/// mid-record) or failing its CRC, where every loader stops too; and whether all were read.
fn read_records(mut bytes: &[u8]) -> (Vec<&[u8]>, bool) {
    let mut events = Vec::new();
    while bytes.len() >= 12 {
        let len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let crc_ok = masked_crc(&bytes[..8]).to_le_bytes() == bytes[8..12];
        let Some(end) = usize::try_from(len).ok().and_then(|n| n.checked_add(16)).filter(|&e| crc_ok && e <= bytes.len()) else {
            return (events, false);
        };
        let data = &bytes[12..end - 4];
        if masked_crc(data).to_le_bytes() != bytes[end - 4..end] {
            return (events, false);
        }
        events.push(data);
        bytes = &bytes[end..];
    }
    (events, bytes.is_empty())
}

/// `Event.step` of an encoded event (0 when absent, protobuf's default); `None` when its
/// fields cannot be walked.
fn event_step(mut event: &[u8]) -> Option<i64> {
    fn take_varint(b: &mut &[u8]) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let (&byte, rest) = b.split_first()?;
            *b = rest;
            v |= u64::from(byte & 0x7f).checked_shl(shift)?;
            if byte < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    }
    let mut step = 0;
    while !event.is_empty() {
        let key = take_varint(&mut event)?;
        let skip = match key & 7 {
            0 if key >> 3 == 2 => {
                step = take_varint(&mut event)? as i64;
                0
            }
            0 => take_varint(&mut event).map(|_| 0)?,
            1 => 8,
            2 => usize::try_from(take_varint(&mut event)?).ok()?,
            5 => 4,
            _ => return None,
        };
        event = event.get(skip..)?;
    }
    Some(step)
}

/// Cuts every event at `step` or later out of the event files rollway wrote in `dir` (see
/// the module docs): a file with such events, or with a record cut short, is rewritten
/// without them and renamed over itself. An event whose step cannot be read is kept.
fn cut_tails(dir: &Path, step: i64) -> Result<()> {
    fn log(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |source| Error::Log { path: path.to_path_buf(), source }
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for path in entries.flatten().map(|e| e.path()) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if !(name.starts_with("events.out.tfevents.") && name.ends_with(".rollway")) {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(log(&path))?;
        let (events, whole) = read_records(&bytes);
        let kept: Vec<&[u8]> = events.iter().copied().filter(|e| event_step(e).is_none_or(|s| s < step)).collect();
        if whole && kept.len() == events.len() {
            continue;
        }
        let mut out = Vec::with_capacity(bytes.len());
        for e in kept {
            encode_record(&mut out, e);
        }
        // No "tfevents" in the name: TensorBoard never reads a half-written copy.
        let tmp = dir.join(format!(".rollway-cut-{}.tmp", std::process::id()));
        std::fs::write(&tmp, &out).and_then(|()| std::fs::rename(&tmp, &path)).map_err(log(&path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_castagnolis() {
        // RFC 3720's check value, and TensorFlow's crc32c test vector (32 zero bytes).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c::crc32c(&[0u8; 32]), 0x8a91_36aa);
    }

    /// An event file in `dir` as rollway writes it: the header, then a point at each of `steps`.
    fn logged(dir: &Path, now: f64, purge: Option<i64>, steps: &[i64]) -> PathBuf {
        let mut f = EventFile::create(dir, now, purge).unwrap();
        for &s in steps {
            f.scalars(s, now, &[("x", s as f64)]).unwrap();
        }
        f.path().to_path_buf()
    }

    fn steps_in(path: &Path) -> Vec<i64> {
        let bytes = std::fs::read(path).unwrap();
        let (events, whole) = read_records(&bytes);
        assert!(whole);
        events.iter().map(|e| event_step(e).unwrap()).collect()
    }

    #[test]
    fn issue72_a_resume_cuts_the_killed_lives_tail_from_rollways_own_files_only() {
        let d = tempfile::tempdir().unwrap();
        let first = logged(d.path(), 100.0, None, &[256, 512, 768]);
        let theirs = d.path().join("events.out.tfevents.1.host.1");
        std::fs::copy(&first, &theirs).unwrap();
        // Killed mid-record: a partial last record.
        let mut bytes = std::fs::read(&first).unwrap();
        bytes.extend_from_within(20..40);
        std::fs::write(&first, &bytes).unwrap();
        let second = logged(d.path(), 101.0, Some(600), &[856]);
        assert_eq!(steps_in(&first), [0, 256, 512], "header and the committed part: 768 >= 600 is cut, and the torn record");
        assert_eq!(steps_in(&second), [0, 600, 856], "header, purge marker, then the resumed life");
        assert_eq!(steps_in(&theirs), [0, 256, 512, 768], "another writer's file is left alone");
        let third = logged(d.path(), 102.0, Some(300), &[]);
        assert_eq!((steps_in(&first), steps_in(&second), steps_in(&third)), (vec![0, 256], vec![0], vec![0, 300]));
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 4, "no copy left behind: {names:?}");
    }

    #[test]
    fn varints_are_protobufs() {
        let mut b = vec![];
        varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
    }
}
