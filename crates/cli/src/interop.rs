//! `export`, `import`: flags → `rollway_interop` calls.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rollway_interop::{lerobot, minari};

use crate::args::{ExportArgs, ExportFormat, ImportArgs, ImportFormat};
use rollway_engine::progress::Bar;

/// Input problems (bad paths, ids, malformed files) exit 2; failures while writing exit 1.
fn classify(e: rollway_interop::Error) -> anyhow::Error {
    if e.is_input() {
        rollway_engine::Error::input_from(e).into()
    } else {
        anyhow::Error::from(e)
    }
}

/// The `MINARI_DATASETS_PATH` under which `out` is found as `id`, if it is laid out that way.
fn minari_root(out: &Path, id: &str) -> Option<PathBuf> {
    let mut p = std::path::absolute(out).ok()?;
    for part in id.rsplit('/') {
        if p.file_name()? != part {
            return None;
        }
        p = p.parent()?.to_path_buf();
    }
    Some(p)
}

pub fn export(a: &ExportArgs) -> Result<bool> {
    match a.to {
        ExportFormat::Lerobot => export_lerobot(a),
        ExportFormat::Minari => {
            only_for(
                "minari",
                &[
                    ("--fps", a.fps.is_some()),
                    ("--task", a.task.is_some()),
                    ("--robot-type", a.robot_type.is_some()),
                    ("--crf", a.crf.is_some()),
                    ("--keyint", a.keyint.is_some()),
                    ("--video-codec", a.video_codec.is_some()),
                ],
            )?;
            let opts = minari::ExportOptions {
                data_format: a.data_format.unwrap_or_default(),
                dataset_id: a.dataset_id.clone(),
                force: a.force,
                author: a.author.clone(),
                description: a.description.clone(),
            };
            let bar = Bar::new(a.quiet, "exporting", "episodes");
            let rep = minari::export(&a.dir, &a.out, &opts, &mut |d, t| bar.update(d, t)).map_err(classify)?;
            drop(bar);
            let row = rows(a.quiet);
            row(
                "exported",
                format!("{} episodes, {} steps, {:.1} MB → {}", rep.episodes, rep.steps, rep.bytes as f64 / 1e6, rep.data_dir.display()),
            );
            row("minari dataset", rep.dataset_id.clone());
            if rep.given_up > 0 {
                row("left out", format!("{} given-up episode(s) (no data)", rep.given_up));
            }
            if !rep.skipped_infos.is_empty() {
                row("infos not written", format!("{} (not numeric, or not at every step)", rep.skipped_infos.join(", ")));
            }
            if !rep.env_spec {
                row("env_spec", "none: not a Gymnasium env, so recover_environment() is unavailable".into());
            }
            match minari_root(&a.out, &rep.dataset_id) {
                Some(root) => row(
                    "load with",
                    format!(
                        "MINARI_DATASETS_PATH={} python -c \"import minari; print(minari.load_dataset('{}'))\"",
                        root.display(),
                        rep.dataset_id
                    ),
                ),
                None => row(
                    "load with",
                    format!("minari.MinariDataset('{}') (or move it to $MINARI_DATASETS_PATH/{})", rep.data_dir.display(), rep.dataset_id),
                ),
            }
            Ok(true)
        }
    }
}

/// Refuses flags that belong to another format instead of ignoring them.
fn only_for(format: &str, flags: &[(&str, bool)]) -> Result<()> {
    match flags.iter().find(|f| f.1) {
        Some((flag, _)) => Err(rollway_engine::Error::input(format!("{flag} does not apply to --to {format}")).into()),
        None => Ok(()),
    }
}

fn export_lerobot(a: &ExportArgs) -> Result<bool> {
    only_for(
        "lerobot",
        &[
            ("--dataset-id", a.dataset_id.is_some()),
            ("--data-format", a.data_format.is_some()),
            ("--author", a.author.is_some()),
            ("--description", a.description.is_some()),
        ],
    )?;
    let d = lerobot::ExportOptions::default();
    let opts = lerobot::ExportOptions {
        fps: a.fps.unwrap_or(d.fps),
        task: a.task.clone(),
        robot_type: a.robot_type.clone(),
        force: a.force,
        video_codec: a.video_codec.unwrap_or(d.video_codec),
        crf: a.crf,
        keyint: a.keyint,
        ..d
    };
    let bar = Bar::new(a.quiet, "exporting", "episodes");
    let rep = lerobot::export(&a.dir, &a.out, &opts, &mut |d, t| bar.update(d, t)).map_err(classify)?;
    drop(bar);
    let row = rows(a.quiet);
    row(
        "exported",
        format!(
            "{} episodes, {} steps ({} frames), {:.1} MB → {}",
            rep.episodes,
            rep.steps,
            rep.frames,
            rep.bytes as f64 / 1e6,
            rep.out.display()
        ),
    );
    row(
        "files",
        format!(
            "{} data, {} video ({})",
            rep.data_files,
            rep.video_files,
            if rep.video_keys.is_empty() { "no images".into() } else { rep.video_keys.join(", ") }
        ),
    );
    if rep.given_up > 0 {
        row("left out", format!("{} given-up episode(s) (no data)", rep.given_up));
    }
    row("final frames", format!("one per episode, flagged {}", lerobot::FINAL_OBSERVATION));
    row(
        "load with",
        format!(
            "LeRobotDataset(repo_id=\"local/{}\", root=\"{}\")",
            a.out.file_name().map_or("dataset".into(), |n| n.to_string_lossy()),
            a.out.display()
        ),
    );
    Ok(true)
}

pub fn import(a: &ImportArgs) -> Result<bool> {
    let target = rollway_engine::Target::create(&a.outdir)?;
    let done = import_into(a, target.dir())?;
    target.finish()?;
    Ok(done)
}

/// Imports `a.path` into the local directory `out` (the target, or its work directory).
fn import_into(a: &ImportArgs, out: &Path) -> Result<bool> {
    let shown = a.outdir.display();
    match a.format {
        ImportFormat::Lerobot => {
            let bar = Bar::new(a.quiet, "importing", "episodes");
            let rep = lerobot::import(&a.path, out, &mut |d, t| bar.update(d, t)).map_err(classify)?;
            drop(bar);
            let row = rows(a.quiet);
            row("imported", format!("{} episodes, {} steps, {:.1} MB → {shown}", rep.episodes, rep.steps, rep.bytes as f64 / 1e6));
            row("env", rep.env.clone());
            row(
                "source",
                if rep.from_rollway {
                    "a rollway export: restored as it was".into()
                } else {
                    "LeRobot: each frame a step, the last observation repeated".into()
                },
            );
            if !rep.skipped_features.is_empty() {
                row("features skipped", rep.skipped_features.join(", "));
            }
            Ok(true)
        }
        ImportFormat::Minari => {
            let bar = Bar::new(a.quiet, "importing", "episodes");
            let rep = minari::import(&a.path, out, &mut |d, t| bar.update(d, t)).map_err(classify)?;
            drop(bar);
            let row = rows(a.quiet);
            row("imported", format!("{} episodes, {} steps, {:.1} MB → {shown}", rep.episodes, rep.steps, rep.bytes as f64 / 1e6));
            row("minari dataset", rep.dataset_id.clone());
            row("env", rep.env.clone());
            if !rep.skipped_infos.is_empty() {
                row("infos not read", format!("{} (not numeric, or not one row per observation)", rep.skipped_infos.join(", ")));
            }
            Ok(true)
        }
    }
}

/// What prints a summary row: nothing under `-q`, whose output is errors and warnings only.
fn rows(quiet: bool) -> impl Fn(&str, String) {
    move |k, v| {
        if !quiet {
            println!("  {k:<18} {v}");
        }
    }
}
