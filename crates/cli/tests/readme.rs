//! The README and the docs site, checked against the real binary (issues 14, 57): the
//! README's first command is the default job, and the sample output the docs show for
//! it is what that job prints, line for line. A shown line with `…` matches any line
//! that starts with the text before the `…` (timings vary); every other line must be
//! equal. Every `rollway` command the README and the docs show parses (the docs'
//! examples also run, under pytest: tests/python/test_docs.py).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A text file of the repository, or a panic naming it.
pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir` whose extension is `ext`, in no particular order.
pub(crate) fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let (mut files, mut dirs) = (vec![], vec![dir.to_path_buf()]);
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())).map(|e| e.unwrap().path()) {
            if entry.is_dir() {
                dirs.push(entry);
            } else if entry.extension().is_some_and(|x| x == ext) {
                files.push(entry);
            }
        }
    }
    files
}

fn readme() -> String {
    read(&root().join("README.md"))
}

/// The README and every page of the docs site, each with its path.
fn texts() -> Vec<(PathBuf, String)> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(files_under(&root().join("docs"), "md"));
    pages.sort();
    pages.into_iter().map(|p| (p.clone(), read(&p))).collect()
}

/// The lines of the first fenced code block after `marker`, without the fence's
/// indent (a block inside a list item is indented).
fn block_after(text: &str, marker: &str) -> Vec<String> {
    let at = text.find(marker).unwrap_or_else(|| panic!("no {marker:?}"));
    let rest = &text[at..];
    let open = rest.find("```").expect("a code block follows");
    let indent = rest[..open].len() - rest[..open].trim_end_matches(' ').len();
    let body = &rest[open..];
    let body = &body[body.find('\n').expect("fence line ends") + 1..];
    let close = body.find(&format!("\n{}```", " ".repeat(indent))).expect("the code block is closed");
    body[..close].lines().map(|l| l.get(indent..).unwrap_or("").to_string()).collect()
}

/// Compares printed lines with the README's; a `…` elides the rest of a line.
fn matches(expected: &[String], printed: &str) -> Result<(), String> {
    let printed: Vec<&str> = printed.lines().collect();
    if printed.len() != expected.len() {
        return Err(format!("{} lines printed, the README shows {}", printed.len(), expected.len()));
    }
    for (i, (want, got)) in expected.iter().zip(&printed).enumerate() {
        let ok = match want.split_once('…') {
            Some((prefix, _)) => got.starts_with(prefix.trim_end()),
            None => want == got,
        };
        if !ok {
            return Err(format!("line {}: README shows\n  {want:?}\nthe job printed\n  {got:?}", i + 1));
        }
    }
    Ok(())
}

#[test]
fn issue14_the_readme_first_command_prints_the_output_the_readme_shows() {
    let text = readme();
    let commands = block_after(&text, "# rollway");
    let first = commands.first().expect("the first screen has commands");
    let command = first.split('#').next().unwrap().trim();
    assert_eq!(command, "make run", "the README's first command changed: update this test with it");
    let makefile = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Makefile")).unwrap();
    let recipe = makefile.split("\nrun:").nth(1).and_then(|r| r.lines().nth(1)).unwrap_or_default().trim();
    assert_eq!(recipe, "cargo run --release --bin rollway -- run $(ARGS)", "`make run` runs the default job");
    // The page that shows the default job's output says so with this marker.
    let marker = "The default job runs";
    let (_, page) = texts().into_iter().find(|(_, t)| t.contains(marker)).expect("a docs page shows the default job's output");
    let shown = block_after(&page, marker);

    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rollway")).arg("run").current_dir(dir.path()).output().expect("binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8_lossy(&o.stdout);
    if let Err(e) = matches(&shown, &printed) {
        panic!("the README's sample output of the default job is stale: {e}\n\nprinted:\n{printed}");
    }
    // What the job says it wrote is there, and each "next" command works on it.
    let data = dir.path().join("rollway-data/PixelMine-v0-000");
    assert!(rollway_store::Dataset::open(&data).is_ok());
    for line in shown.iter().filter(|l| l.trim_start().starts_with("rollway ")) {
        let cmd = line.trim().split("    (").next().unwrap();
        let args: Vec<&str> = cmd.split_whitespace().skip(1).collect();
        let o = Command::new(env!("CARGO_BIN_EXE_rollway")).args(&args).current_dir(dir.path()).output().expect("binary runs");
        assert!(o.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn elided_lines_match_by_prefix_and_the_rest_exactly() {
    let want = vec!["  a          1".to_string(), "  t          …".to_string()];
    assert!(matches(&want, "  a          1\n  t          3.2 s\n").is_ok());
    assert!(matches(&want, "  a          2\n  t          3.2 s\n").unwrap_err().contains("line 1"));
    assert!(matches(&want, "  a          1\n  x          3.2 s\n").unwrap_err().contains("line 2"));
    assert!(matches(&want, "  a          1\n").unwrap_err().contains("1 lines printed"));
}

/// Every picture the README shows is in the repository (the report's screenshot).
#[test]
fn issue14_the_readmes_images_exist() {
    let text = readme();
    let images: Vec<&str> = text.split("](").skip(1).filter_map(|s| s.split(')').next()).filter(|p| p.ends_with(".png")).collect();
    assert!(images.contains(&"docs/report.png"), "{images:?}");
    for p in images {
        let path = format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"));
        assert!(std::fs::metadata(&path).is_ok_and(|m| m.len() > 10_000), "{path} is missing or empty");
    }
}

/// Every `rollway …` command in the shell blocks of `text`, as words: `\`
/// continuations joined, `# comments` cut, placeholder lines (`rollway run ...`) left out.
fn commands_in(text: &str) -> Vec<Vec<String>> {
    let (mut cmds, mut in_sh, mut cur) = (vec![], false, String::new());
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && matches!(line.trim(), "```sh" | "```bash");
            continue;
        }
        if !in_sh || line.trim_start().starts_with('#') {
            continue;
        }
        let code = line.split(" #").next().unwrap_or_default().trim_end();
        cur.push_str(code.trim_end_matches('\\'));
        cur.push(' ');
        if code.ends_with('\\') {
            continue;
        }
        // The command ends where the shell's syntax starts: a redirection, a pipe, `&`, `;`, `&&`.
        let words: Vec<String> = cur
            .split_whitespace()
            .take_while(|w| !matches!(*w, "|" | "||" | "&&" | ";" | "&") && !w.starts_with(['>', '<']) && !w.starts_with("2>"))
            .map(|w| w.trim_matches('"').to_string())
            .collect();
        cur.clear();
        if words.first().is_some_and(|w| w == "rollway") && !words.iter().any(|w| w == "...") {
            cmds.push(words);
        }
    }
    cmds
}

/// A command in the README or the docs with a flag or subcommand that no longer exists
/// fails here, even where the docs' test does not run it.
#[test]
fn issue14_every_rollway_command_in_the_readme_and_the_docs_parses() {
    use clap::Parser;
    let mut count = 0;
    for (path, text) in texts() {
        for words in commands_in(&text) {
            count += 1;
            if let Err(e) = rollway_cli::args::Cli::try_parse_from(&words) {
                assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{}: `{}`:\n{e}", path.display(), words.join(" "));
            }
        }
    }
    assert!(count >= 20, "found only {count} commands");
}
