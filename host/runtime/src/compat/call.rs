//! One `execute` of a compatibility component, in the call's fresh store.

use wasmtime::Store;

use super::bindings::SandboxedToolPre;
use super::bindings::exports::near::agent::tool::{GuestFailure, Request, Response};
use crate::state::CallState;

/// A compatibility component, linked and ready to instantiate.
pub(crate) type Pre = SandboxedToolPre<CallState>;

/// What `execute` returned, or the error of instantiating (`true`) or running (`false`) it.
pub(crate) type Executed = Result<Result<String, GuestFailure>, (bool, wasmtime::Error)>;

/// Instantiate and call `execute` with `params` (the validated input, as
/// compact JSON) and the context `{"capability_id": …}` — nothing else: the
/// ecosystem's guests select their operation from it, and some refuse
/// unknown context fields.
pub(crate) async fn execute(
    pre: &Pre,
    store: &mut Store<CallState>,
    capability_id: &str,
    params: &str,
) -> Executed {
    let tool = pre
        .instantiate_async(&mut *store)
        .await
        .map_err(|e| (true, e))?;
    let request = Request {
        params: compact(params),
        context: Some(context(capability_id)),
    };
    match tool
        .near_agent_tool()
        .call_execute(&mut *store, &request)
        .await
    {
        Ok(Response::Success(output)) => Ok(Ok(output)),
        Ok(Response::Failure(failure)) => Ok(Err(failure)),
        Err(e) => Err((false, e)),
    }
}

/// The per-call context: exactly `{"capability_id":"<id>"}`.
pub(crate) fn context(capability_id: &str) -> String {
    serde_json::json!({ "capability_id": capability_id }).to_string()
}

/// `params` re-serialized compactly (the input was validated as JSON
/// already; a host may have pretty-printed it).
fn compact(params: &str) -> String {
    serde_json::from_str::<serde_json::Value>(params)
        .map_or_else(|_| params.to_owned(), |value| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_carries_the_capability_id_only() {
        let context: serde_json::Value = serde_json::from_str(&context("github.get_repo")).unwrap();
        assert_eq!(
            context,
            serde_json::json!({"capability_id": "github.get_repo"})
        );
        assert_eq!(compact("{ \"a\" : 1 }"), r#"{"a":1}"#);
    }
}
