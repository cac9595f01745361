//! A committed shard's untrusted bytes: its index JSON (checked against itself and
//! the metadata before any number in it is used) and its Parquet file (schema checked
//! against the dataset's spaces before any row is read). The input's first byte picks
//! which file of a copy of the v2 CartPole fixture it replaces; readers must return
//! errors or verify problems, never panic, and never change a file.
#![no_main]
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rollway_store::{Dataset, OpenOptions};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// One copy of the fixture per fuzzing process, reused across inputs.
fn dataset() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rollway-fuzz-shard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/store/tests/fixtures/format-v2/cartpole"), &dir);
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, bytes)) = data.split_first() else { return };
    let dir = dataset();
    let file = dir.join(if which % 2 == 0 { "index/shard-000000.json" } else { "steps/shard-000000.parquet" });
    let pristine = std::fs::read(&file).unwrap();
    std::fs::write(&file, bytes).unwrap();
    if let Ok(ds) = Dataset::open_with(dir, OpenOptions { skip_damaged: true }) {
        let _ = rollway_store::verify(&ds);
        for e in ds.episodes() {
            let _ = ds.read_episode(e.episode_id);
        }
        let _ = ds.shard_columns(0);
    }
    std::fs::write(&file, pristine).unwrap();
});
