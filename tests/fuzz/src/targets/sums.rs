//! `SHA256SUMS` (read by the package reader): the input is the digest list
//! of an archive holding one fixed manifest. A package that loads had that
//! manifest's digest listed; a refusal of the list names a line it has.

use sha2::{Digest, Sha256};

use super::archive::{check_loaded, check_refusal, load_tar, tar_of};

/// A valid manifest with no other file (an MCP package).
pub const MANIFEST: &[u8] = include_bytes!("sums.manifest.toml");

pub fn run(data: &[u8]) {
    let tar = tar_of(&[("SHA256SUMS", data), ("manifest.toml", MANIFEST)]);
    match load_tar(&tar) {
        Ok(loaded) => {
            check_loaded(&loaded);
            let text = std::str::from_utf8(data).expect("a list that loaded is UTF-8");
            let digest = hex::encode(Sha256::digest(MANIFEST));
            assert!(
                text.lines().any(|line| line
                    .get(..64)
                    .is_some_and(|d| d.eq_ignore_ascii_case(&digest))),
                "loaded without the manifest's digest listed"
            );
        }
        Err(error) => {
            check_refusal(&error);
            let message = error.to_string();
            if let Some(at) = message.find("SHA256SUMS: line ") {
                let n: usize = message[at + "SHA256SUMS: line ".len()..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("a line number");
                let lines = String::from_utf8_lossy(data).lines().count();
                assert!((1..=lines).contains(&n), "line {n} of {lines}: {message}");
            }
        }
    }
}
