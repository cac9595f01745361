//! The workspace's structure, checked (issue 58): the Contributing page's layout table
//! names every crate, and no module of a crate imports one that imports it back; nor does a
//! module of the Python package, counting the imports inside functions (issue 66: `_atari` and
//! `_host` imported each other's names from inside functions, which a top-level-only reading missed).

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

/// The modules of `files` by name: each file's path below `base` joined by `sep`, a package's own
/// file (`index`: `mod.rs`, `__init__.py`) named after its folder. Rust's and Python's alike.
fn modules(base: &Path, files: &[PathBuf], index: &[&str], sep: &str) -> BTreeMap<String, PathBuf> {
    let name = |p: &Path| {
        let rel = p.strip_prefix(base).unwrap().with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|l| index.contains(&l.as_str())) {
            parts.pop();
        }
        parts.join(sep)
    };
    files.iter().map(|p| (name(p), p.clone())).collect()
}

/// The longest prefix of `path` (its parts joined by `sep`) that names one of `mods` other than
/// `from`: the module an import of `path` reaches.
fn imported<T>(mods: &BTreeMap<String, T>, path: &[&str], sep: &str, from: &str) -> Option<String> {
    (1..=path.len()).rev().map(|k| path[..k].join(sep)).find(|k| mods.contains_key(k) && k != from)
}

/// A crate's modules by path (`a::b`) and the modules each names as `crate::…` outside
/// comments and its `#[cfg(test)]` part.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src, &files_under(src, "rs"), &["mod", "lib", "main"], "::");
    let mut graph = BTreeMap::new();
    for (m, path) in &mods {
        let text = read(path);
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut uses = BTreeSet::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for hit in line.split("crate::").skip(1) {
                let path: Vec<&str> =
                    hit.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next().unwrap_or("").split("::").collect();
                if let Some(k) = imported(&mods, &path, "::", m) {
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

/// The Python package's modules (`rollway.x.y`, the extension's stub `_rollway.pyi` included) and
/// the package modules each imports, anywhere in the file: `import rollway.x`, `from rollway.x import
/// y` (the module `rollway.x.y` when there is one, else `rollway.x`), relative imports, and
/// parenthesised lists over several lines. Docstrings are skipped, so an example in one is no import.
fn python_graph(pkg: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = files_under(pkg, "py");
    files.extend(files_under(pkg, "pyi"));
    let mods = modules(pkg.parent().unwrap(), &files, &["__init__"], ".");
    let mut graph = BTreeMap::new();
    for (m, path) in &mods {
        // A module's own package, from which `from . import x` counts.
        let package = if path.ends_with("__init__.py") { m.clone() } else { m.rsplit_once('.').map_or("", |x| x.0).to_string() };
        let mut uses = BTreeSet::new();
        for (module, names) in python_imports(&read(path)) {
            let dots = module.len() - module.trim_start_matches('.').len();
            let module = if dots == 0 {
                module
            } else {
                let mut up: Vec<&str> = package.split('.').collect();
                up.truncate(up.len().saturating_sub(dots - 1));
                [up.join("."), module[dots..].to_string()].iter().filter(|s| !s.is_empty()).cloned().collect::<Vec<_>>().join(".")
            };
            let targets: Vec<String> =
                if names.is_empty() { vec![module] } else { names.iter().map(|n| format!("{module}.{n}")).collect() };
            for n in &targets {
                uses.extend(imported(&mods, &n.split('.').collect::<Vec<_>>(), ".", m));
            }
        }
        graph.insert(m.clone(), uses);
    }
    graph
}

/// A Python file's imports outside docstrings: `(module, names)`, names empty for `import module`.
fn python_imports(text: &str) -> Vec<(String, Vec<String>)> {
    let (mut out, mut in_doc, mut pending) = (vec![], false, String::new());
    for line in text.lines() {
        let quotes = line.matches("\"\"\"").count() + line.matches("'''").count();
        let was_doc = in_doc;
        in_doc ^= quotes % 2 == 1;
        if was_doc || quotes > 0 {
            continue;
        }
        let code = line.split('#').next().unwrap_or("").trim();
        if !pending.is_empty() {
            pending.push(' ');
            pending.push_str(code);
            if !code.contains(')') {
                continue;
            }
        } else if code.starts_with("from ") || code.starts_with("import ") {
            pending = code.to_string();
            if code.contains('(') && !code.contains(')') {
                continue;
            }
        } else {
            continue;
        }
        let stmt = std::mem::take(&mut pending).replace(['(', ')'], " ");
        let bare = |n: &str| n.split(" as ").next().unwrap_or("").trim().to_string();
        if let Some(rest) = stmt.strip_prefix("import ") {
            out.extend(rest.split(',').map(|n| (bare(n), vec![])));
        } else if let Some((module, names)) = stmt.strip_prefix("from ").and_then(|r| r.split_once(" import ")) {
            let names = names.split(',').map(bare).filter(|n| !n.is_empty()).collect();
            out.push((module.trim().to_string(), names));
        }
    }
    out
}

#[test]
fn issue66_no_module_of_the_python_package_imports_one_that_imports_it_back() {
    let graph = python_graph(&root().join("python/rollway"));
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    assert!(graph.len() >= 15 && edges >= 20, "read the package's modules and imports: {graph:?}");
    // The reader sees imports inside functions (the kind the circle of issue 66 was made of).
    assert!(graph["rollway._run"].contains("rollway._host"), "rollway._run imports rollway._host inside a function");
    let cycles: Vec<String> = graph.keys().filter_map(|m| cycle_from(&graph, m)).map(|c| c.join(" → ")).collect();
    assert!(cycles.is_empty(), "import circles in the Python package:\n{}", cycles.join("\n"));
}

#[test]
fn issue66_the_python_import_reader_sees_a_circle_made_inside_functions() {
    let dir = std::env::temp_dir().join(format!("rollway-structure-{}", std::process::id()));
    let pkg = dir.join("rollway");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "\"\"\"Docs.\n\nfrom rollway.b import nothing\n\"\"\"\n").unwrap();
    std::fs::write(pkg.join("a.py"), "def f():\n    from rollway.b import (\n        X,\n        Y,\n    )\n").unwrap();
    std::fs::write(pkg.join("b.py"), "def g():\n    from . import a  # back to a\n").unwrap();
    let graph = python_graph(&pkg);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(graph["rollway"].is_empty(), "an import in a docstring is no import: {graph:?}");
    assert_eq!(cycle_from(&graph, "rollway.a"), Some(vec!["rollway.a".into(), "rollway.b".into(), "rollway.a".into()]));
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
