//! Each discovery bound refuses the whole catalog and keeps the previous
//! one; what a valid server may send (long descriptions, dotted names) is
//! accepted.

use serde_json::{Value, json};
use warden_hosted::{CatalogBoundError, HostedError};
use warden_tests::fake_mcp::Script;

use crate::support::lane;

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

fn nested(depth: usize) -> Value {
    (0..depth).fold(
        json!({"type": "string"}),
        |inner, _| json!({"type": "object", "properties": {"a": inner}}),
    )
}

async fn refused_after(change: impl FnOnce(&mut Script)) -> CatalogBoundError {
    let (fake, server) = lane(Script::default()).await;
    let first = server.catalog().await.unwrap();
    fake.script(change);
    let error = server.refresh().await.unwrap_err();
    // The previous catalog stays.
    assert_eq!(server.current().unwrap(), first);
    match error {
        HostedError::Discovery(bound) => bound,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn pages_are_followed() {
    let (fake, server) = lane(Script::default()).await;
    fake.script(|s| {
        s.tools = (0..7).map(|i| tool(&format!("t{i}"))).collect();
        s.page_size = 3;
    });
    assert_eq!(server.catalog().await.unwrap().len(), 7);
    let lists = fake.methods().iter().filter(|m| *m == "tools/list").count();
    assert_eq!(lists, 3);
}

#[tokio::test]
async fn more_than_max_tools_across_pages() {
    let error = refused_after(|s| {
        s.tools = (0..9).map(|i| tool(&format!("t{i}"))).collect();
        s.page_size = 4;
    })
    .await;
    assert_eq!(error, CatalogBoundError::TooManyTools { max: 8 });
}

#[tokio::test]
async fn a_name_longer_than_128_bytes() {
    let error = refused_after(|s| s.tools.push(tool(&"n".repeat(129)))).await;
    assert_eq!(error, CatalogBoundError::NameTooLong { max: 128 });
}

/// Issue 44: a description over 2 KiB (common in real servers) refused the
/// whole server; it is cut with a marker.
#[tokio::test]
async fn a_description_longer_than_2_kib_is_cut() {
    let (fake, server) = lane(Script::default()).await;
    fake.script(|s| {
        s.tools
            .push(json!({"name": "wordy", "description": "d".repeat(5000),
            "inputSchema": {"type": "object"}}));
        s.tools.push(tool("files.read"));
    });
    let catalog = server.refresh().await.unwrap();
    let wordy = catalog.iter().find(|t| t.name == "wordy").unwrap();
    assert_eq!(wordy.description.len(), 2048);
    assert!(
        wordy
            .description
            .ends_with(warden_hosted::discovery::CUT_MARKER)
    );
    assert!(catalog.iter().any(|t| t.name == "files.read"));
}

#[tokio::test]
async fn a_schema_deeper_than_32() {
    let error = refused_after(|s| {
        s.tools
            .push(json!({"name": "deep", "inputSchema": nested(20)}));
    })
    .await;
    assert!(
        matches!(error, CatalogBoundError::SchemaTooDeep { ref tool, max: 32 } if tool == "deep")
    );
}

#[tokio::test]
async fn a_response_larger_than_2_mib() {
    let error = refused_after(|s| {
        // Seven tools of ~1.9 KiB descriptions each, many times over 2 MiB in
        // total would need more tools than max_tools; a huge schema does it.
        let big: serde_json::Map<String, Value> = (0..40_000)
            .map(|i| {
                (
                    format!("p{i:05}"),
                    json!({"type": "string", "description": "xxxxxxxxxxxxxxxxxxxx"}),
                )
            })
            .collect();
        s.tools
            .push(json!({"name": "huge", "inputSchema": {"type": "object", "properties": big}}));
    })
    .await;
    assert_eq!(error, CatalogBoundError::ResponseTooLarge { max: 2 << 20 });
}

#[tokio::test]
async fn a_name_a_model_could_not_call() {
    let error = refused_after(|s| s.tools.push(tool("rm -rf"))).await;
    assert!(matches!(error, CatalogBoundError::InvalidName { .. }));
}
