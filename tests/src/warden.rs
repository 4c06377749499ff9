//! Run the `warden` binary against a throwaway data directory.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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

    /// Append `toml` to `warden.toml` (after [`Warden::configure`] or a
    /// fixture's configuration).
    pub fn configure_more(&self, toml: &str) {
        let path = self.dir.path().join("warden.toml");
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(toml);
        std::fs::write(path, text).expect("write warden.toml");
    }

    /// A command with `--data-dir` set, for callers that drive the process themselves.
    /// Registry logins come from `<data dir>/docker/config.json`
    /// ([`Warden::docker_login`]), never the machine's own Docker config.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg("--data-dir")
            .arg(self.dir.path())
            .env("DOCKER_CONFIG", self.dir.path().join("docker"));
        command
    }

    /// Write a Docker config file login for `registry` (what `docker
    /// login` writes), read by `warden publish` and `warden install oci://…`.
    pub fn docker_login(&self, registry: &str, username: &str, password: &str) {
        use base64::Engine as _;
        let dir = self.dir.path().join("docker");
        std::fs::create_dir_all(&dir).expect("docker config dir");
        let auth =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        let config = serde_json::json!({ "auths": { registry: { "auth": auth } } });
        std::fs::write(dir.join("config.json"), config.to_string()).expect("docker config");
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

    /// Starts `warden serve --http <addr> <args>`; the server (killed when
    /// dropped) and the port it reports listening on.
    pub fn serve_http(&self, addr: &str, args: &[&str]) -> (Serving, u16) {
        self.serve_http_with_env(addr, args, &[])
    }

    /// [`Warden::serve_http`] with `env` set for the server.
    pub fn serve_http_with_env(
        &self,
        addr: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Serving, u16) {
        let child = self
            .command()
            .args(["serve", "--http", addr])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("warden serve starts");
        let mut serving = Serving(child);
        let mut lines = BufReader::new(serving.0.stderr.take().expect("piped"));
        let mut line = String::new();
        loop {
            line.clear();
            assert_ne!(
                lines.read_line(&mut line).expect("stderr"),
                0,
                "serve exited"
            );
            if let Some(url) = line.split("streamable HTTP at ").nth(1) {
                let port = url
                    .trim()
                    .trim_end_matches(" (Ctrl-C stops)")
                    .trim_end_matches("/mcp")
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| panic!("no port in {line:?}"));
                return (serving, port);
            }
        }
    }
}

/// A running `warden serve`, killed (SIGKILL) when dropped.
#[derive(Debug)]
pub struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
