//! Integration tests of warden-egress against local HTTPS servers.

mod auth;
mod codings;
mod egress;
mod leaks;
mod redirects;
mod support;
