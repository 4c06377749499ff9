//! The default packages built into the warden binary, verified by digest when loaded.
