//! [`Fragments`]: whether a text shares a run of characters with any form of
//! a secret — for short labels that must hold no part of a token at all
//! (account identity claims), where redaction would leave the rest.

use zeroize::Zeroizing;

use super::{Redactor, canon, forms};

/// How many consecutive characters a text must share with a form of a
/// secret to be said to hold part of it: enough that a random token and an
/// ordinary label never share one by chance, few enough that a token cut in
/// two, three or four pieces still has one in each.
pub const SHARED_RUN: usize = 8;

/// Every run of [`SHARED_RUN`] characters of every form of some secrets.
pub struct Fragments {
    /// Sorted, ASCII case folded.
    windows: Zeroizing<Vec<[u8; SHARED_RUN]>>,
    /// For secrets shorter than a run: matched whole.
    redactor: Redactor,
}

impl std::fmt::Debug for Fragments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fragments")
            .field("windows", &self.windows.len())
            .finish_non_exhaustive()
    }
}

impl Fragments {
    /// The runs of every form of `secrets` (empty ones ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a [u8]> + Clone) -> Self {
        let mut windows = Zeroizing::new(Vec::new());
        for secret in secrets.clone() {
            if secret.is_empty() {
                continue;
            }
            for form in forms::forms(secret) {
                let folded = Zeroizing::new(form.bytes.to_ascii_lowercase());
                for window in folded.windows(SHARED_RUN) {
                    let mut run = [0u8; SHARED_RUN];
                    run.copy_from_slice(window);
                    windows.push(run);
                }
            }
        }
        windows.sort_unstable();
        windows.dedup();
        Self {
            windows,
            redactor: Redactor::new(secrets),
        }
    }

    /// Whether `text` holds a run of a form of a secret (or a whole secret
    /// shorter than a run), raw or in a canonical view.
    pub fn found_in(&self, text: &[u8]) -> bool {
        let shares = |candidate: &[u8]| {
            let folded = Zeroizing::new(candidate.to_ascii_lowercase());
            folded.windows(SHARED_RUN).any(|w| {
                self.windows
                    .binary_search_by(|run| run.as_slice().cmp(w))
                    .is_ok()
            })
        };
        self.redactor.contains(text) || shares(text) || canon::any_text(text, shares, |_, _| true)
    }
}
