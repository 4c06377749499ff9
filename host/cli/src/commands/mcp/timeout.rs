//! A registered server's own call timeout (`warden mcp add --timeout`),
//! kept beside its package as `<data-dir>/mcp/<id>.timeout.toml`, not in
//! it: the package's content — and the consent and grants pinned to it —
//! stay the same when only its timeout changes. `[mcp.servers.<id>]` in
//! `warden.toml` overrides it; `[mcp] max_call_timeout_secs` bounds both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

/// The file's contents.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Timeout {
    call_timeout_secs: u64,
}

fn path(mcp_dir: &Path, id: &str) -> PathBuf {
    mcp_dir.join(format!("{id}.timeout.toml"))
}

/// Keep `secs` as server `id`'s timeout (`None`: remove it).
pub(super) fn write(mcp_dir: &Path, id: &str, secs: Option<u64>) -> Result<()> {
    let path = path(mcp_dir, id);
    match secs {
        Some(call_timeout_secs) => {
            let text = toml::to_string(&Timeout { call_timeout_secs })?;
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
        }
        None => match std::fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(error).with_context(|| format!("removing {}", path.display()))
            }
            _ => Ok(()),
        },
    }
}

/// Server `id`'s own timeout, when it has one.
pub(super) fn read(mcp_dir: &Path, id: &str) -> Result<Option<u64>> {
    let path = path(mcp_dir, id);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    let timeout: Timeout =
        toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
    if timeout.call_timeout_secs == 0 {
        bail!("{}: call_timeout_secs must be at least 1", path.display());
    }
    Ok(Some(timeout.call_timeout_secs))
}

/// Every registered server's own timeout, by package id.
pub(crate) fn read_all(mcp_dir: &Path) -> Result<BTreeMap<String, u64>> {
    let mut timeouts = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(mcp_dir) else {
        return Ok(timeouts);
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".timeout.toml")
            && let Some(secs) = read(mcp_dir, id)?
        {
            timeouts.insert(id.to_owned(), secs);
        }
    }
    Ok(timeouts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_kept_read_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "mcp-slow", Some(300)).unwrap();
        assert_eq!(read(dir.path(), "mcp-slow").unwrap(), Some(300));
        assert_eq!(
            read_all(dir.path()).unwrap(),
            BTreeMap::from([("mcp-slow".to_owned(), 300)])
        );
        write(dir.path(), "mcp-slow", None).unwrap();
        assert_eq!(read(dir.path(), "mcp-slow").unwrap(), None);
        std::fs::write(
            dir.path().join("mcp-x.timeout.toml"),
            "call_timeout_secs = 0",
        )
        .unwrap();
        let error = read_all(dir.path()).unwrap_err().to_string();
        assert!(error.contains("at least 1"), "{error}");
    }
}
