//! A run's episode stream, as a chain of sinks.
//!
//! The generator hands each finished episode, labelled by the run's filters and
//! in index order, to one [`Observer`]; [`Sinks`] is that observer, and each of
//! its stages does one thing: [`JsonLines`] writes the episode's line
//! (`--episodes-json`), the [`DatasetWriter`] records it, and the progress
//! [`Display`] sees only progress ticks. A stage that fails stops the run, and
//! the episodes already passed on stay committed. The JSON line is written
//! first because the writer takes the episode (its arrays move to the writer
//! thread rather than being copied).

use std::fs::File;
use std::io::{BufWriter, Write};

use rollway_runner::{EpisodeResult, Observer, Progress, SinkError};
use rollway_store::DatasetWriter;

use crate::progress::Display;

/// The stages a run's episodes and progress go through.
pub struct Sinks<'a> {
    /// One JSON line per episode, if asked for.
    pub lines: Option<JsonLines>,
    /// The dataset the run records into, if it records.
    pub record: Option<DatasetWriter>,
    /// Progress on the terminal, the caller's stop hook and the run's timeline.
    pub progress: Display<'a>,
    /// The training policy version acting in every step, if the run evaluates one: stamped on each recorded step.
    pub version: Option<u64>,
}

impl Observer for Sinks<'_> {
    fn on_episode(&mut self, mut episode: EpisodeResult) -> Result<(), SinkError> {
        if let (Some(v), Some(t)) = (self.version, episode.trajectory.as_mut()) {
            t.versions = vec![v; t.rewards.len()];
        }
        if let Some(l) = &mut self.lines {
            l.write(&episode)?;
        }
        if let Some(w) = &self.record {
            w.write(episode)?;
        }
        Ok(())
    }

    fn on_progress(&mut self, p: &Progress) -> Result<(), SinkError> {
        self.progress.tick(p)
    }

    fn recycler(&self) -> Option<rollway_core::Recycler> {
        self.record.as_ref().map(DatasetWriter::recycler)
    }
}

/// Episodes as JSON lines in a file, buffered.
pub struct JsonLines(BufWriter<File>);

impl JsonLines {
    /// Lines into `file` (created by the caller, so a bad path fails before the run).
    pub fn new(file: File) -> JsonLines {
        JsonLines(BufWriter::new(file))
    }

    fn write(&mut self, episode: &EpisodeResult) -> Result<(), SinkError> {
        let line = serde_json::to_string(episode).expect("episode results serialize");
        writeln!(self.0, "{line}").map_err(|e| format!("writing --episodes-json: {e}").into())
    }

    /// Writes out what is buffered.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
