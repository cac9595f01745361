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
//! which TensorBoard's loader drops every event of the directory at that step or later
//! that it read before (the killed life's uncommitted tail).

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
        let len = (data.len() as u64).to_le_bytes();
        let mut rec = Vec::with_capacity(data.len() + 16);
        rec.extend_from_slice(&len);
        rec.extend_from_slice(&masked_crc(&len).to_le_bytes());
        rec.extend_from_slice(data);
        rec.extend_from_slice(&masked_crc(data).to_le_bytes());
        let written = self.out.write_all(&rec).and_then(|()| self.out.flush());
        written.map_err(|source| Error::Log { path: self.path.clone(), source })
    }
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

    #[test]
    fn varints_are_protobufs() {
        let mut b = vec![];
        varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
    }
}
