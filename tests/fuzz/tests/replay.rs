//! Every corpus and regression input through its target, in a plain
//! (not instrumented) build: the short fuzz run of `cargo xtask test`.
//! A failing input is named with its target's property.

use std::path::{Path, PathBuf};

use warden_fuzz::TARGETS;

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_and_regression_input_keeps_its_targets_properties() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failed = Vec::new();
    for target in TARGETS {
        let seeds = inputs(&root.join("corpus").join(target.name));
        assert!(
            !seeds.is_empty(),
            "target `{}` has no seed in corpus/",
            target.name
        );
        let regressions = inputs(&root.join("regressions").join(target.name));
        for file in seeds.iter().chain(&regressions) {
            let data = std::fs::read(file).expect("an input file");
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            if outcome.is_err() {
                failed.push(file.display().to_string());
            }
        }
        println!(
            "{}: {} seeds, {} regressions",
            target.name,
            seeds.len(),
            regressions.len()
        );
    }
    assert!(
        failed.is_empty(),
        "inputs failing their target: {failed:#?}"
    );
}
