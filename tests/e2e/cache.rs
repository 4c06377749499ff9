//! The compile cache in the data directory keeps to its bound.

use std::path::{Path, PathBuf};

/// A package whose component is not the bundled echo's.
fn near_probe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/packages/near-probe")
}

/// The compiled components in `warden`'s cache, every engine's.
fn cache_entries(warden: &warden_tests::Warden) -> usize {
    let Ok(engines) = std::fs::read_dir(warden.data_dir().join("cache")) else {
        return 0;
    };
    engines
        .flatten()
        .filter_map(|engine| std::fs::read_dir(engine.path()).ok())
        .flat_map(|files| files.flatten())
        .filter(|file| file.file_name().to_string_lossy().ends_with(".cwasm"))
        .count()
}

/// `[cache] max_bytes` bounds the compile cache: with room for less than
/// one entry, only the one last written stays (the least recently used
/// went); without it, every component's entry stays. The bound holds with a
/// `--config` file outside the data directory too: the compiler process
/// (which writes the entries) was started without it and kept to the
/// default.
#[test]
fn the_compile_cache_keeps_to_its_bound() {
    let run_both = |warden: &warden_tests::Warden, global: &[&str]| {
        let run = |args: &[&str]| {
            let all: Vec<&str> = global.iter().chain(args).copied().collect();
            let run = warden.run(&all);
            assert_eq!(run.code, 0, "{run:?}");
        };
        run(&["call", "echo.echo", "--input", r#"{"text": "a"}"#]);
        run(&["install", near_probe().to_str().unwrap()]);
        run(&["call", "near-probe.host_calls", "--input", r#"{"x": 1}"#]);
    };
    let unbounded = crate::warden();
    run_both(&unbounded, &[]);
    assert!(cache_entries(&unbounded) >= 2);

    let bounded = crate::warden();
    bounded.configure("[cache]\nmax_bytes = 1\n");
    run_both(&bounded, &[]);
    assert_eq!(cache_entries(&bounded), 1);

    let elsewhere = crate::warden();
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("warden.toml");
    std::fs::write(&file, "[cache]\nmax_bytes = 1\n").unwrap();
    run_both(&elsewhere, &["--config", file.to_str().unwrap()]);
    assert_eq!(cache_entries(&elsewhere), 1);
}

/// The compiler process runs with `--config` and without the host's
/// environment: a configuration whose store is PostgreSQL with its key in
/// `$WARDEN_SECRET_KEY` (the usual deployment) made it refuse to start, so
/// every component compiled in the server's process instead.
#[test]
fn the_compiler_process_does_not_check_the_store() {
    use std::io::Write as _;
    let warden = crate::warden();
    let config = tempfile::tempdir().unwrap();
    let file = config.path().join("warden.toml");
    std::fs::write(
        &file,
        "[store]\nurl = \"postgres://warden@db.example/warden\"\n",
    )
    .unwrap();
    let wasm = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages/echo/wasm/echo.wasm"),
    )
    .unwrap();
    let mut child = warden
        .command()
        .env_clear()
        .arg("--config")
        .arg(&file)
        .args(["compile-component", "--name=echo"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A child that refused at once has closed its stdin: its error says why.
    let _ = child.stdin.take().unwrap().write_all(&wasm);
    let done = child.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(cache_entries(&warden), 1);
}
