//! Run the `warden` binary against a throwaway data directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A data directory and the commands run against it.
#[derive(Debug)]
pub struct Warden {
    binary: PathBuf,
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
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self:?}"))
    }

    /// Everything printed.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl Warden {
    /// A fresh data directory for the `warden` binary at `binary`
    /// (an integration test passes `env!("CARGO_BIN_EXE_warden")`).
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Warden {
            binary: binary.into(),
            dir: tempfile::tempdir().expect("temp dir"),
        }
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
        let mut command = Command::new(&self.binary);
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
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
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
