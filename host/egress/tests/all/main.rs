//! Integration tests of warden-egress against local HTTPS servers.

mod auth;
mod egress;
mod redirects;
mod support;
