//! The workspace's structure, checked (issue 58): the Contributing page's layout table
//! names every crate, and no module of a crate imports one that imports it back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::readme::{files_under, read, root};

/// The workspace's members, from the root Cargo.toml (`members = ["crates/x", …]`).
fn workspace_members() -> Vec<String> {
    let toml = read(&root().join("Cargo.toml"));
    let line = toml.lines().find(|l| l.trim_start().starts_with("members")).expect("Cargo.toml lists the members");
    line.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn issue58_the_layout_table_lists_every_workspace_crate_and_no_other() {
    // The README sends readers to the docs' Contributing page for the layout.
    let page = read(&root().join("docs/contributing.md"));
    let table = page.split("## Repository layout").nth(1).expect("docs/contributing.md has a Repository layout section");
    let table = table.split("\n## ").next().unwrap_or(table);
    let listed: std::collections::BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(str::to_string))
        .filter(|p| p.starts_with("crates/"))
        .collect();
    let members: std::collections::BTreeSet<String> = workspace_members().into_iter().collect();
    assert!(members.len() >= 10, "read the workspace's members: {members:?}");
    assert_eq!(listed, members, "the layout table's crates against the workspace's members");
}

/// A crate's modules by path (`a::b`) and the modules each names as `crate::…` outside
/// comments and its `#[cfg(test)]` part.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = files_under(src, "rs");
    let name = |p: &Path| {
        let rel = p.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            parts.pop();
        }
        parts.join("::")
    };
    let mods: BTreeMap<String, PathBuf> = files.iter().map(|p| (name(p), p.clone())).collect();
    let mut graph = BTreeMap::new();
    for (m, path) in &mods {
        let text = read(path);
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut uses = BTreeSet::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for hit in line.split("crate::").skip(1) {
                let path: Vec<&str> =
                    hit.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next().unwrap_or("").split("::").collect();
                // The longest module prefix of the path is the module it names.
                if let Some(k) = (1..=path.len()).rev().map(|k| path[..k].join("::")).find(|k| mods.contains_key(k) && k != m) {
                    uses.insert(k);
                }
            }
        }
        graph.insert(m.clone(), uses);
    }
    graph
}

/// A cycle through `start`, if one of its imports leads back to it.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((m, trail)) = stack.pop() {
        for next in &graph[&m] {
            if next == start {
                return Some([trail.clone(), vec![start.to_string()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), [trail.clone(), vec![next.clone()]].concat()));
            }
        }
    }
    None
}

#[test]
fn issue58_no_module_imports_a_module_that_imports_it_back() {
    let mut cycles = vec![];
    let mut modules = 0;
    for member in workspace_members() {
        let graph = module_graph(&root().join(&member).join("src"));
        modules += graph.len();
        for m in graph.keys() {
            if let Some(c) = cycle_from(&graph, m) {
                cycles.push(format!("{member}: {}", c.join(" → ")));
            }
        }
    }
    assert!(modules > 100, "read the crates' modules: {modules}");
    assert!(cycles.is_empty(), "import circles inside crates:\n{}", cycles.join("\n"));
}

#[test]
fn issue58_the_fronts_reach_datasets_on_a_store_only_through_the_engine() {
    // The engine's `Target` and `Source` decide local or store; a front that named the
    // store's crate would be deciding it again.
    for front in ["crates/cli", "crates/python"] {
        let manifest = read(&root().join(front).join("Cargo.toml"));
        assert!(!manifest.contains("rollway-remote"), "{front}/Cargo.toml depends on rollway-remote");
        for file in files_under(&root().join(front).join("src"), "rs") {
            assert!(!read(&file).contains("rollway_remote"), "{} names rollway_remote", file.display());
        }
    }
}
