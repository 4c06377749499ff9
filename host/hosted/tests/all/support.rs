//! A lane wired to the fake server.

use std::sync::Arc;
use std::time::Duration;

use warden_core::spec::CredentialSpec;
use warden_egress::resolve::OverrideResolver;
use warden_egress::testing::TestCa;
use warden_egress::{Egress, testing};
use warden_hosted::{HostedServer, LaneLimits, ServerSpec};
use warden_tests::fake_mcp::{FakeMcp, MCP_HOST, MCP_URL, Script, token_store};

/// The extension id the lane runs as.
pub(crate) const EXT: &str = "fake";

pub(crate) fn egress(fake: &FakeMcp, hosts: &[&str]) -> Egress {
    egress_with(fake.ca(), fake.server().resolver(hosts), hosts)
}

/// Egress trusting `ca`, resolving with `resolver`, `hosts` allowed to be
/// local, and the token stored for extension [`EXT`] at `mcp.example.com`.
pub(crate) fn egress_with(ca: &TestCa, resolver: OverrideResolver, hosts: &[&str]) -> Egress {
    let secrets = token_store(EXT);
    let origins: Vec<(&str, u16)> = hosts.iter().map(|h| (*h, 443)).collect();
    Egress::new(
        testing::config(ca, &origins),
        Arc::new(secrets),
        Arc::new(resolver),
    )
    .unwrap()
}

pub(crate) fn spec(max_tools: usize) -> ServerSpec {
    ServerSpec {
        extension_id: EXT.into(),
        content: None,
        server: MCP_URL.into(),
        credentials: vec![CredentialSpec::bearer(
            "mcp_token",
            "example",
            &[],
            MCP_HOST,
        )],
        max_tools,
        loopback_http: false,
        settings: Default::default(),
    }
}

pub(crate) fn limits() -> LaneLimits {
    LaneLimits {
        call_timeout: Duration::from_secs(10),
        ..LaneLimits::default()
    }
}

/// The fake with `script` and a lane (max_tools 8) to it.
pub(crate) async fn lane(script: Script) -> (FakeMcp, HostedServer) {
    let fake = FakeMcp::start(script).await;
    let server = HostedServer::new(egress(&fake, &[MCP_HOST]), &spec(8), limits()).unwrap();
    (fake, server)
}
