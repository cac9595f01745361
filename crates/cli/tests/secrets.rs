//! Issue 72: a credentials URL (`s3://KEY:SECRET@bucket/x`, its `@` written in any form)
//! given to any argument of any command exits 2, and its secret reaches neither stdout,
//! stderr, nor any file the command leaves (names or contents). The arguments are read
//! off clap's own command tree, so a flag added later is covered without a line here.

use std::path::Path;
use std::process::Command;

use clap::CommandFactory;
use rollway_cli::args::Cli;

const KEY: &str = "AKIAEXAMPLE";
const SECRET: &str = "hunter2secret";

/// The URL with its userinfo's `@` written as `at`.
fn url(at: &str) -> String {
    format!("s3://{KEY}:{SECRET}{at}bucket/ds")
}

/// Runs `args` in `cwd` (its home and cache too, with no store reachable); what a failure says.
fn leaks(cwd: &Path, args: &[String]) -> Option<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_rollway"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .expect("binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if [KEY, SECRET].iter().any(|s| text.contains(s)) {
        return Some(format!("{args:?} printed the credentials:\n{text}"));
    }
    if o.status.code() != Some(2) {
        return Some(format!("{args:?} exited {:?}, not 2:\n{text}", o.status.code()));
    }
    files_holding_secrets(cwd).map(|f| format!("{args:?} left the credentials in {f}"))
}

/// A file under `dir` whose name or contents hold the key or secret.
fn files_holding_secrets(dir: &Path) -> Option<String> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let (path, name) = (entry.path(), entry.file_name().to_string_lossy().into_owned());
        let found = if path.is_dir() {
            files_holding_secrets(&path)
        } else {
            let bytes = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
            [KEY, SECRET].iter().any(|s| bytes.contains(s)).then(|| path.display().to_string())
        };
        if found.is_some() || [KEY, SECRET].iter().any(|s| name.contains(s)) {
            return found.or(Some(path.display().to_string()));
        }
    }
    None
}

/// One command line per argument that takes a value, in every command and subcommand,
/// giving that argument the value `v` (earlier positionals get a plain `ds`); flags
/// both as `--flag v` and `--flag=v`.
fn every_argument(cmd: &clap::Command, prefix: &[String], v: &str, out: &mut Vec<Vec<String>>) {
    let mut positionals = 0;
    for a in cmd.get_arguments().filter(|a| a.get_action().takes_values()) {
        let mut line = prefix.to_vec();
        if a.is_positional() {
            line.extend(std::iter::repeat_n("ds".to_string(), positionals));
            line.push(v.to_string());
            positionals += 1;
            out.push(line);
        } else if let Some(long) = a.get_long() {
            out.push([line.clone(), vec![format!("--{long}"), v.to_string()]].concat());
            line.push(format!("--{long}={v}"));
            out.push(line);
        }
    }
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        every_argument(sub, &[prefix, &[sub.get_name().to_string()]].concat(), v, out);
    }
}

#[test]
fn issue72_no_argument_of_any_command_prints_or_stores_a_credentials_url() {
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for at in ["@", "%40"] {
        every_argument(&Cli::command(), &[], &url(at), &mut lines);
    }
    assert!(lines.len() > 100, "the walk reached every command's arguments: {}", lines.len());
    let leaked: Vec<String> = lines.iter().filter_map(|l| leaks(tmp.path(), l)).collect();
    assert!(leaked.is_empty(), "{} of {} command lines:\n{}", leaked.len(), lines.len(), leaked.join("\n"));
}

#[test]
fn issue72_the_command_lines_that_printed_the_secret_no_longer_do() {
    let tmp = tempfile::tempdir().unwrap();
    let mut leaked = Vec::new();
    for at in ["@", "%40", "%2540", "\u{ff20}", "%252540"] {
        let u = url(at);
        let lines: [&[&str]; 5] = [
            &["run", "--env", "CartPole-v1", "--episodes", "2", "--out", &u, "--report"],
            &["run", "--resume", &u, "--report"],
            &["relabel", &u],
            &["run", "--env", "CartPole-v1", "--episodes", "2", "--out", &u],
            &["report", "ds", "--out", &u],
        ];
        let lines = lines.map(|l| l.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        leaked.extend(lines.iter().filter_map(|l| leaks(tmp.path(), l)));
    }
    assert!(leaked.is_empty(), "{}", leaked.join("\n"));
}
