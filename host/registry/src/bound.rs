//! Generic output bounding, applied after execution.
//!
//! An output over [`BoundConfig::max_lines`] or [`BoundConfig::max_bytes`]
//! is cut to a head and a tail (each at most half of both limits, cut on
//! line boundaries where possible and always on character boundaries) with a
//! marker between them saying how much was cut and where the full output was
//! kept. The full output goes to a new `0600` file in
//! [`BoundConfig::spill_dir`]; files older than [`BoundConfig::retention`]
//! are removed whenever a new one is written (or by [`OutputBounder::sweep`]).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

const SPILL_PREFIX: &str = "output-";
const SPILL_SUFFIX: &str = ".txt";

/// Errors of output bounding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BoundError {
    /// The full output could not be kept.
    #[error("cannot keep the full output in `{path}`")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Limits and the place full outputs are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundConfig {
    /// Most lines an output keeps uncut (default 2,000).
    pub max_lines: usize,
    /// Most bytes an output keeps uncut (default 50 KiB).
    pub max_bytes: usize,
    /// Where full outputs are kept (the host's data dir); `None` keeps nothing.
    pub spill_dir: Option<PathBuf>,
    /// How long kept outputs live (default 7 days).
    pub retention: Duration,
}

impl Default for BoundConfig {
    fn default() -> Self {
        BoundConfig {
            max_lines: 2_000,
            max_bytes: 50 * 1024,
            spill_dir: None,
            retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// How an output was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// Bytes of the full output.
    pub total_bytes: usize,
    /// Lines of the full output.
    pub total_lines: usize,
    /// Bytes left out of the preview.
    pub omitted_bytes: usize,
    /// Lines (or parts of lines) left out of the preview.
    pub omitted_lines: usize,
    /// Where the full output was kept.
    pub full_output: Option<PathBuf>,
}

/// A bounded output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// The output, or its head + marker + tail.
    pub text: String,
    /// How it was cut; `None` when it fit.
    pub truncation: Option<Truncation>,
}

impl Bounded {
    /// Whether the output was cut.
    pub fn is_truncated(&self) -> bool {
        self.truncation.is_some()
    }
}

/// Applies a [`BoundConfig`].
#[derive(Debug, Clone, Default)]
pub struct OutputBounder {
    config: BoundConfig,
}

impl OutputBounder {
    /// A bounder with `config`.
    pub fn new(config: BoundConfig) -> Self {
        OutputBounder { config }
    }

    /// The configuration.
    pub fn config(&self) -> &BoundConfig {
        &self.config
    }

    /// Bounds `output`, keeping the full text on disk when it is cut.
    pub fn bound(&self, output: &str) -> Result<Bounded, BoundError> {
        let total_lines = count_lines(output);
        let c = &self.config;
        if total_lines <= c.max_lines && output.len() <= c.max_bytes {
            return Ok(Bounded {
                text: output.to_owned(),
                truncation: None,
            });
        }
        let (lines, bytes) = (c.max_lines / 2, c.max_bytes / 2);
        let head_end = head_end(output, lines, bytes);
        let tail_start = tail_start(output, lines, bytes).max(head_end);
        let middle = &output[head_end..tail_start];
        let full_output = match &c.spill_dir {
            Some(dir) => Some(self.spill(dir, output)?),
            None => None,
        };
        let truncation = Truncation {
            total_bytes: output.len(),
            total_lines,
            omitted_bytes: middle.len(),
            omitted_lines: count_lines(middle),
            full_output,
        };
        let head = &output[..head_end];
        let mut text = String::with_capacity(head_end + (output.len() - tail_start) + 160);
        text.push_str(head);
        if !head.is_empty() && !head.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&marker(&truncation));
        text.push('\n');
        text.push_str(&output[tail_start..]);
        Ok(Bounded {
            text,
            truncation: Some(truncation),
        })
    }

    /// Removes kept outputs older than the retention period; returns how
    /// many were removed.
    pub fn sweep(&self, now: SystemTime) -> Result<usize, BoundError> {
        let Some(dir) = &self.config.spill_dir else {
            return Ok(0);
        };
        let io = |source| BoundError::Io {
            path: dir.clone(),
            source,
        };
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io(e)),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with(SPILL_PREFIX) && name.ends_with(SPILL_SUFFIX)) {
                continue;
            }
            let modified = entry.metadata().and_then(|m| m.modified()).map_err(io)?;
            let age = now.duration_since(modified).unwrap_or_default();
            if age > self.config.retention && fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    fn spill(&self, dir: &Path, output: &str) -> Result<PathBuf, BoundError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| BoundError::Io { path, source }
        };
        create_private_dir(dir).map_err(io(dir))?;
        self.sweep(SystemTime::now())?;
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let mut hasher = Sha256::new();
        hasher.update(output.as_bytes());
        hasher.update(now.as_nanos().to_le_bytes());
        let tag = &hex::encode(hasher.finalize())[..16];
        let path = dir.join(format!(
            "{SPILL_PREFIX}{}-{tag}{SPILL_SUFFIX}",
            now.as_millis()
        ));
        let mut file = private_file(&path).map_err(io(&path))?;
        file.write_all(output.as_bytes()).map_err(io(&path))?;
        file.sync_all().map_err(io(&path))?;
        Ok(path)
    }
}

fn marker(t: &Truncation) -> String {
    let kept = match &t.full_output {
        Some(path) => format!("full output saved to {}", path.display()),
        None => "full output was not kept".to_owned(),
    };
    format!(
        "[... output truncated: {} lines ({} bytes) omitted of {} lines ({} bytes); {kept} ...]",
        t.omitted_lines, t.omitted_bytes, t.total_lines, t.total_bytes
    )
}

fn count_lines(s: &str) -> usize {
    s.split_inclusive('\n').count()
}

/// End of the longest prefix of at most `lines` lines and `bytes` bytes;
/// a first line longer than `bytes` is cut at a character boundary.
fn head_end(s: &str, lines: usize, bytes: usize) -> usize {
    let mut end = 0;
    for line in s.split_inclusive('\n').take(lines) {
        if end + line.len() > bytes {
            if end == 0 {
                end = floor_boundary(s, bytes);
            }
            break;
        }
        end += line.len();
    }
    end
}

/// Start of the longest suffix of at most `lines` lines and `bytes` bytes.
fn tail_start(s: &str, lines: usize, bytes: usize) -> usize {
    let mut start = s.len();
    for line in s.split_inclusive('\n').rev().take(lines) {
        if s.len() - start + line.len() > bytes {
            if start == s.len() {
                start = ceil_boundary(s, s.len().saturating_sub(bytes));
            }
            break;
        }
        start -= line.len();
    }
    start
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
mod tests;
