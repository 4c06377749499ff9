//! Run the `warden` binary against a throwaway data directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The `warden` binary, built once per test run (`cargo build -p warden`).
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "warden"])
            .current_dir(root)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building warden failed");
        // Tests run from <target>/debug/deps/; the binary is in <target>/debug/.
        let exe = std::env::current_exe().expect("test executable");
        let dir = exe.parent().and_then(Path::parent).expect("target profile dir");
        dir.join("warden")
    })
}

/// A data directory and the commands run against it.
#[derive(Debug)]
pub struct Warden {
    dir: tempfile::TempDir,
}

/// What one command printed.
#[derive(Debug)]
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// stdout parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self:?}"))
    }

    /// Everything printed.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl Default for Warden {
    fn default() -> Self {
        Self::new()
    }
}

impl Warden {
    /// A fresh data directory.
    pub fn new() -> Self {
        Warden { dir: tempfile::tempdir().expect("temp dir") }
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Write `warden.toml` into the data directory.
    pub fn configure(&self, toml: &str) {
        std::fs::write(self.dir.path().join("warden.toml"), toml).expect("write warden.toml");
    }

    /// A command with `--data-dir` set, for callers that drive the process themselves.
    pub fn command(&self) -> Command {
        let mut command = Command::new(binary());
        command.arg("--data-dir").arg(self.dir.path());
        command
    }

    /// Run `warden <args>` with `stdin` as its input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("warden starts");
        child.stdin.take().expect("piped").write_all(stdin.as_bytes()).expect("write stdin");
        finish(child.wait_with_output().expect("warden finishes"))
    }

    /// Run `warden <args>` with no input.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, "")
    }
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
