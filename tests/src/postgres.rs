//! A throwaway PostgreSQL cluster for the store tests: `initdb` in a
//! temporary directory, a server on a free loopback port, stopped (and its
//! files removed) when dropped. No mock database.
//!
//! The binaries come from `$WARDEN_PG_BIN`, else the newest
//! `/usr/lib/postgresql/<version>/bin` (Debian's `postgresql` package, which
//! `cargo xtask test` installs when it is missing), else `PATH`. PostgreSQL
//! refuses to run as root, so as root the cluster belongs to the `postgres`
//! user the package creates.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The superuser the clusters are created with (trust authentication on
/// loopback only).
const SUPERUSER: &str = "warden";

/// A running cluster.
#[derive(Debug)]
pub struct TestPostgres {
    root: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    run_as: Option<String>,
}

impl TestPostgres {
    /// Creates and starts a cluster. Panics, saying what is missing, when
    /// PostgreSQL is not installed.
    pub fn start() -> TestPostgres {
        let bin = binaries();
        let root = tempfile::Builder::new()
            .prefix("warden-pg-")
            .tempdir()
            .expect("temp dir");
        let run_as = is_root().then(|| "postgres".to_owned());
        let data = root.path().join("data");
        std::fs::create_dir(&data).expect("data dir");
        if let Some(user) = &run_as {
            // The unprivileged server must reach and own its directories.
            set_mode(root.path(), 0o755);
            chown(&data, user);
            chown(root.path(), user);
        }
        let mut pg = TestPostgres {
            root,
            bin,
            port: free_port(),
            run_as,
        };
        pg.run(
            "initdb",
            &[
                "-D",
                path(&data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        // A port found free may be taken before the server binds it (tests
        // run in parallel): try another one.
        let log = pg.root.path().join("server.log");
        for attempt in 1..=3 {
            let options = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                pg.port,
                path(pg.root.path()),
            );
            let started = pg.try_run(
                "pg_ctl",
                &[
                    "-D",
                    path(&data),
                    "-o",
                    &options,
                    "-l",
                    path(&log),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
            );
            match started {
                Ok(()) => break,
                Err(error) if attempt == 3 => panic!("{error}"),
                Err(_) => pg.port = free_port(),
            }
        }
        pg
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `name` (which [`TestPostgres::create_database`]
    /// makes).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name` and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        self.run(
            "createdb",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                SUPERUSER,
                name,
            ],
        );
        self.url(name)
    }

    fn run(&self, tool: &str, args: &[&str]) {
        if let Err(error) = self.try_run(tool, args) {
            panic!("{error}");
        }
    }

    /// Runs `tool`; on failure, what it and the server log said.
    fn try_run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let program = self.bin.join(tool);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        let output = command
            .args(args)
            .current_dir(self.root.path())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
        if output.status.success() {
            return Ok(());
        }
        Err(format!(
            "{tool} {args:?} failed: {}{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default(),
        ))
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let data = self.root.path().join("data");
        let program = self.bin.join("pg_ctl");
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        let _ = command
            .args(["-D", path(&data), "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The directory holding `initdb`, `pg_ctl` and `createdb`.
fn binaries() -> PathBuf {
    if let Some(dir) = std::env::var_os("WARDEN_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).find(|dir| dir.join("initdb").is_file()));
    on_path.unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed: no initdb in $WARDEN_PG_BIN, /usr/lib/postgresql/*/bin \
             or PATH (`apt-get install postgresql`; `cargo xtask test` installs it)"
        )
    })
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub(crate) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn set_mode(dir: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

pub(crate) fn chown(dir: &Path, user: &str) {
    let status = Command::new("chown")
        .arg(user)
        .arg(dir)
        .status()
        .expect("chown runs");
    assert!(status.success(), "chown {user} {}", dir.display());
}
