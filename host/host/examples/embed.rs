//! Embed Warden: build a host with your own stores, open a Location,
//! install the built-in packages, publish the catalog and invoke a tool.
//!
//! ```sh
//! cargo xtask bundle && cargo run -p warden-host --example embed
//! ```

use std::sync::Arc;

use serde_json::json;
use warden_host::{Catalog, Host, HostConfig, Invocation, InvokeOutcome, Origin};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Your runtime's stores; here the in-memory ones.
    let host = Host::builder(HostConfig::default())
        .secret_store(Arc::new(warden_egress::secrets::MemoryStore::new()))
        .approval_store(Arc::new(warden_registry::MemoryApprovalStore::new()))
        .build()?;
    let location = host.open_location("my-project");
    for package in location.install_embedded()? {
        println!("installed {}", warden_manifest::summary(&package));
    }

    // One model request: a snapshot, its catalog, then a call it makes.
    let snapshot = location.snapshot();
    let catalog = Catalog::from_snapshot(&snapshot);
    println!(
        "{} tools for the model, e.g. {}",
        catalog.entries().len(),
        catalog.openai_tools()[0]["function"]["name"]
    );

    let call = Invocation::new(
        "echo_echo",
        json!({ "text": "embedded", "transform": "upper" }),
        Origin::LoopRun,
    );
    match location.invoke_in(&snapshot, call).await? {
        InvokeOutcome::Completed(done) => println!("echo said {}", done.output["text"]),
        InvokeOutcome::NeedsApproval(request) => println!("needs approval: {}", request.id),
        InvokeOutcome::Failed(failure) => println!("failed: {failure}"),
    }
    Ok(())
}
