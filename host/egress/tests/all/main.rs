//! Integration tests of warden-egress against local HTTPS servers.

mod auth;
mod by_url;
mod codings;
mod egress;
mod leaks;
mod pool;
mod redirects;
mod support;
