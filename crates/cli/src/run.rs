//! `rollway run`: the flags as a request to the engine, and its outcome printed.

use anyhow::Result;
use rollway_engine::{execute, RunHooks};

use crate::args::RunArgs;
use crate::report;

/// Returns Ok(false) when the run finished but gave up or left untried episodes.
pub(crate) fn cli_run(a: &RunArgs) -> Result<bool> {
    let o = execute(&a.request(), RunHooks::default())?;
    let summary = &o.summary;
    // -q: errors and warnings only (the summary still goes to --summary-json).
    if !a.quiet {
        print!("{}", report::summary_table(summary));
    }
    if let (Some(dir), Some(w), false) = (&o.out, &o.written, a.quiet) {
        let mb = w.bytes as f64 / 1e6;
        println!("  {:<18} {} (+{} episodes, {} steps in {} shards, {mb:.1} MB)", "dataset", dir.display(), w.episodes, w.steps, w.shards);
        println!("  {:<18} {:.2} s after the run (encoding the last frames, fsyncs)", "committed", o.commit_wait.as_secs_f64());
        if let Some((path, bytes)) = &o.report {
            crate::data::print_report(path, *bytes);
        }
        print!("{}", report::next_steps(dir, summary));
    }
    Ok(report::shortfall(summary, o.out.as_deref()))
}
