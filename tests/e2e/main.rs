//! End-to-end tests through the `warden` binary. They expect the packages to
//! be bundled (`cargo xtask test` bundles before it runs them).

mod cli;
mod github;
