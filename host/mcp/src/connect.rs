//! Connecting an account through the client (URL-mode elicitation): a call
//! refused with `auth_required` whose account a person can connect by
//! opening a URL (an OAuth recipe) offers that URL; once the authorization
//! completes and the account is stored, the server runs the call again.

use std::collections::BTreeMap;
use std::sync::Mutex;

use std::time::Duration;

use rmcp::{
    RoleServer,
    model::{ElicitRequestParams, ElicitationAction},
    service::RequestContext,
};
use serde_json::Value;

use crate::backend::Backend;

/// How long a person has to agree to open the URL.
const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// Whether the client on this request declared URL-mode elicitation.
pub(crate) fn client_opens_urls(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.url.is_some())
}

/// Start the connection `details` names for a client that cannot open a
/// URL itself, and put the authorize URL in the answer (`details.connect_url`,
/// and a line of `message`): the person opens it, and the model makes the
/// same call again once it is connected. The connection waits in the
/// background (five minutes); nothing when none can be made by URL.
pub(crate) async fn link<B: Backend>(
    backend: &B,
    message: &mut String,
    details: &mut Value,
    caller: Option<&crate::Caller>,
) {
    // Each waits up to five minutes (a listener, a pending authorization):
    // a model calling on without connecting gets no more than its share.
    let Some(slot) = LinkSlot::take(caller.map_or("", |c| c.subject.as_str())) else {
        return;
    };
    let Some(connect) = backend.connect_by_url(details, caller).await else {
        return;
    };
    let Some(fields) = details.as_object_mut() else {
        return;
    };
    fields.insert("connect_url".into(), Value::String(connect.url.clone()));
    message.push_str(&format!(
        "\nTo connect it, open {} and authorize; then make the same call again.",
        connect.url
    ));
    tokio::spawn(async move {
        if let Err(error) = connect.done.await {
            tracing::info!(%error, "a connection offered as a link did not complete");
        }
        drop(slot);
    });
}

/// One link connection's place among those waiting, its caller's and the
/// process's; given back when dropped.
struct LinkSlot {
    caller: String,
}

/// Link connections waiting for their browser, by caller subject (`""`:
/// no authenticated caller).
static LINKS_WAITING: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// At most this many link connections wait at once, per process ...
const MAX_LINKS_WAITING: usize = 16;

/// ... and per caller, so one caller cannot take every place.
const MAX_LINKS_PER_CALLER: usize = 4;

impl LinkSlot {
    fn take(caller: &str) -> Option<LinkSlot> {
        let mut waiting = LINKS_WAITING.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = waiting.values().sum();
        let mine = waiting.get(caller).copied().unwrap_or(0);
        if total >= MAX_LINKS_WAITING || mine >= MAX_LINKS_PER_CALLER {
            return None;
        }
        *waiting.entry(caller.to_owned()).or_default() += 1;
        Some(LinkSlot {
            caller: caller.to_owned(),
        })
    }
}

impl Drop for LinkSlot {
    fn drop(&mut self) {
        let mut waiting = LINKS_WAITING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = waiting.get_mut(&self.caller) {
            *count -= 1;
            if *count == 0 {
                waiting.remove(&self.caller);
            }
        }
    }
}

/// Offer the connection `details` names; whether the account is now
/// connected (the person accepted and the authorization completed). The
/// authorization runs from the moment the URL exists, so a browser that
/// returns before the client answers is not lost; a decline or failure
/// abandons it, and the caller returns the original `auth_required`.
pub(crate) async fn by_url<B: Backend>(
    backend: &B,
    details: &Value,
    caller: Option<&crate::Caller>,
    context: &RequestContext<RoleServer>,
) -> bool {
    let Some(connect) = backend.connect_by_url(details, caller).await else {
        return false;
    };
    let completion = tokio::spawn(connect.done);
    let params = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: connect.message,
        url: connect.url,
        elicitation_id: elicitation_id(),
    };
    let answer = context
        .peer
        .create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT))
        .await;
    match answer {
        Ok(result) if result.action == ElicitationAction::Accept => {}
        Ok(_) | Err(_) => {
            completion.abort();
            return false;
        }
    }
    match completion.await {
        Ok(Ok(())) => true,
        Ok(Err(error)) => {
            tracing::info!(%error, "connecting the account by URL failed");
            false
        }
        Err(_) => false,
    }
}

/// A fresh, unguessable elicitation id.
fn elicitation_id() -> String {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random generator works");
    format!(
        "connect-{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::LinkSlot;

    #[test]
    fn one_caller_holds_no_more_than_its_share_of_waiting_links() {
        let mine: Vec<LinkSlot> = (0..4)
            .map(|_| LinkSlot::take("links-test-mallory").expect("a place"))
            .collect();
        assert!(LinkSlot::take("links-test-mallory").is_none());
        let other = LinkSlot::take("links-test-alice").expect("another caller's place");
        drop(mine);
        assert!(LinkSlot::take("links-test-mallory").is_some());
        drop(other);
    }
}
