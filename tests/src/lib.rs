//! End-to-end tests across the Warden crates and the warden binary.
