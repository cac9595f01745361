//! `rollway run --backend ray`: Ray is a Python library, so a Ray run is driven by the
//! Python package (`python -m rollway.ray` in `$ROLLWAY_PYTHON`). Here the flags and the
//! config file are resolved into the run's settings exactly as for a local run — same
//! keys, same checks, same messages — and handed to the driver as the config file's
//! keys in JSON; the driver's exit code (0, 1, 2 as `rollway run`'s) passes through.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use crate::args::RunArgs;
use crate::input;

/// Runs `a` on Ray; Ok(false) when the run gave up or left episodes untried.
pub(crate) fn run(a: &RunArgs) -> Result<bool> {
    let mut cmd = Command::new(python());
    cmd.args(["-m", "rollway.ray"]);
    input(driver_args(a, &mut cmd))?;
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => {
            let py = python();
            return input(Err(anyhow!(e).context(format!(
                "--backend ray runs `{} -m rollway.ray` (set $ROLLWAY_PYTHON to a Python with rollway and ray installed)",
                py.display()
            ))));
        }
    };
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        Some(2) => Err(rollway_engine::Error::input("the Ray driver refused the run (its message is above)").into()),
        _ => bail!("the Ray driver ended with {status}"),
    }
}

fn python() -> PathBuf {
    rollway_host::default_python()
}

/// The driver's command line: `--resume DIR` (with a raised target), or the resolved
/// settings and `--out DIR`; then the Ray options.
fn driver_args(a: &RunArgs, cmd: &mut Command) -> Result<()> {
    if a.opts.episodes_json.is_some() || a.report || a.no_record {
        bail!("--backend ray records into --out DIR and writes its summary (--summary-json); --episodes-json, --report and --no-record are for local runs");
    }
    let request = a.request();
    let afresh = match &a.resume {
        Some(dir) => rollway_engine::resume_starts_afresh(&request, dir)?,
        None => false,
    };
    if let (Some(dir), false) = (&a.resume, afresh) {
        // Options beside --resume must equal the stored config: checked here, as a local resume does.
        rollway_engine::resume_from(dir, &request)?;
        cmd.arg("--resume").arg(dir);
        if let Some(n) = a.opts.episodes {
            cmd.arg("--episodes").arg(n.to_string());
        }
        if a.opts.steps.is_some() {
            bail!("--steps: a Ray run's target is a number of episodes (--episodes)");
        }
    } else {
        // A resume where nothing was recorded starts the run afresh into its directory, as locally.
        let out = a.resume.as_ref().filter(|_| afresh).or(a.out.as_ref());
        let out = out.context("--backend ray records into --out DIR, on storage every node of the cluster sees")?;
        let job = request.resolve()?;
        let mut settings = job.to_file_config();
        if job.calibrate {
            // Left to the driver, which measures them as a local run would.
            settings.envs_per_worker = None;
        }
        if job.calibrate_mode {
            settings.mode = None;
        }
        cmd.arg("--settings").arg(serde_json::to_string(&settings).expect("configs serialize")).arg("--out").arg(out);
        if a.append {
            cmd.arg("--append");
        }
    }
    if let Some(p) = &a.opts.summary_json {
        cmd.arg("--summary-json").arg(p);
    }
    if let Some(addr) = &a.ray_address {
        cmd.arg("--address").arg(addr);
    }
    if let Some(n) = a.ray_actors {
        cmd.arg("--actors").arg(n.to_string());
    }
    if a.quiet {
        cmd.arg("--quiet");
    }
    Ok(())
}
