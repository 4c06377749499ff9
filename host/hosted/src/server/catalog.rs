//! The accepted catalog of a [`HostedServer`]: listed once, kept until the
//! server announces a change or it grows older than the refresh interval,
//! saved for the next process and restored from it, every listing bounded
//! ([`crate::discovery`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rmcp::model::PaginatedRequestParams;
use serde_json::Value;

use super::{HostedServer, LaneLimits, StaleUnlessListed, sanitize};
use crate::discovery::{self, CatalogBoundError, RemoteTool};
use crate::error::HostedError;

impl HostedServer {
    /// The accepted catalog, listing again when it is stale (first use, or
    /// after `tools/list_changed`). A refused listing keeps the previous one
    /// and returns the error.
    pub async fn catalog(&self) -> Result<Arc<Vec<RemoteTool>>, HostedError> {
        if let Some(catalog) = self.fresh() {
            return Ok(catalog);
        }
        let _turn = self.listing.lock().await;
        // Listed by another caller while this one waited its turn.
        if let Some(catalog) = self.fresh() {
            return Ok(catalog);
        }
        self.list_again().await
    }

    /// The accepted catalog unless it is stale.
    fn fresh(&self) -> Option<Arc<Vec<RemoteTool>>> {
        if self.is_stale() {
            None
        } else {
            self.current()
        }
    }

    /// Whether the next [`HostedServer::catalog`] lists again: never listed,
    /// `tools/list_changed` received, the last listing failed, or the
    /// catalog is older than [`LaneLimits::refresh_interval`].
    pub fn is_stale(&self) -> bool {
        if self.listener.stale.load(Ordering::SeqCst) {
            return true;
        }
        let catalog = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        catalog.as_ref().is_none_or(|(_, listed)| {
            listed.is_none_or(|at| at.elapsed() >= self.limits.refresh_interval)
        })
    }

    /// The last accepted catalog, without asking the server.
    pub fn current(&self) -> Option<Arc<Vec<RemoteTool>>> {
        self.catalog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(catalog, _)| catalog.clone())
    }

    /// The accepted catalog as JSON a later process can [`restore`], with
    /// the endpoint it came from; `None` before any catalog was accepted.
    ///
    /// [`restore`]: HostedServer::restore
    pub fn saved(&self) -> Option<Vec<u8>> {
        let catalog = self.current()?;
        let tools: Vec<Value> = catalog.iter().map(RemoteTool::to_json).collect();
        let saved = serde_json::json!({ "server": self.endpoint().url(), "tools": tools });
        serde_json::to_vec_pretty(&saved).ok()
    }

    /// Start from a catalog [`saved`] by an earlier process: it is checked
    /// against the same bounds as a listing and must come from this
    /// endpoint. It is published as the current catalog but is stale: the
    /// first use lists again. A catalog this process accepted is kept.
    ///
    /// [`saved`]: HostedServer::saved
    pub fn restore(&self, saved: &[u8]) -> Result<Arc<Vec<RemoteTool>>, HostedError> {
        #[derive(serde::Deserialize)]
        struct Saved {
            server: String,
            tools: Vec<rmcp::model::Tool>,
        }
        let saved: Saved = serde_json::from_slice(saved)
            .map_err(|e| HostedError::SavedCatalog(sanitize(&e.to_string())))?;
        if saved.server != self.endpoint().url() {
            return Err(HostedError::SavedCatalog(
                "it was listed from another endpoint".into(),
            ));
        }
        let bytes = serde_json::to_vec(&saved.tools).map_or(usize::MAX, |b| b.len());
        let tools = Arc::new(discovery::check(saved.tools, bytes, &self.bounds)?);
        let mut catalog = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        match catalog.as_ref() {
            Some((current, _)) => Ok(current.clone()),
            None => {
                *catalog = Some((tools.clone(), None));
                Ok(tools)
            }
        }
    }

    /// The lane's limits.
    pub fn limits(&self) -> &LaneLimits {
        &self.limits
    }

    /// List every page, check the bounds, and replace the catalog only when
    /// all of it is accepted.
    ///
    /// The catalog stays stale until a listing is accepted: one refused,
    /// timed out or dropped midway (its caller cancelled) is tried again by
    /// the next [`HostedServer::catalog`], so an announcement it was
    /// answering is not lost.
    ///
    /// Listings take turns: a refresh that starts while another lists waits
    /// for it, then lists anew. Run together, an answer to the earlier
    /// listing arriving last replaced the newer catalog with the older one
    /// (and cleared the mark of the announcement between them).
    pub async fn refresh(&self) -> Result<Arc<Vec<RemoteTool>>, HostedError> {
        let _turn = self.listing.lock().await;
        self.list_again().await
    }

    /// [`HostedServer::refresh`], its turn taken.
    async fn list_again(&self) -> Result<Arc<Vec<RemoteTool>>, HostedError> {
        // Cleared now, so an announcement during the listing marks it again.
        self.listener.stale.store(false, Ordering::SeqCst);
        let mut stale_again = StaleUnlessListed(Some(&self.listener.stale));
        let listing = tokio::time::timeout(self.limits.call_timeout, self.list_all());
        // On an error the guard marks the catalog stale again, and the
        // previous catalog stays.
        let tools = listing
            .await
            .map_err(|_| HostedError::Timeout(self.timeout_ms()))??;
        let mut catalog = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        // The same tools keep the same catalog: nothing is republished (nor
        // announced to clients) for a listing that changed nothing.
        let tools = match catalog.as_ref() {
            Some((current, _)) if **current == tools => current.clone(),
            _ => Arc::new(tools),
        };
        *catalog = Some((tools.clone(), Some(Instant::now())));
        stale_again.0 = None;
        Ok(tools)
    }

    async fn list_all(&self) -> Result<Vec<RemoteTool>, HostedError> {
        let peer = self.peer().await?;
        let mut tools = Vec::new();
        let mut bytes = 0;
        let mut cursor = None;
        for _ in 0..self.bounds.max_pages {
            let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = peer
                .list_tools(params)
                .await
                .map_err(|e| self.service_error(e))?;
            bytes += serde_json::to_vec(&page).map_or(usize::MAX, |b| b.len());
            // Stop early: a page over a bound refuses the whole catalog.
            if bytes > self.bounds.max_response_bytes {
                return Err(CatalogBoundError::ResponseTooLarge {
                    max: self.bounds.max_response_bytes,
                }
                .into());
            }
            tools.extend(page.tools);
            if tools.len() > self.bounds.max_tools {
                return Err(CatalogBoundError::TooManyTools {
                    max: self.bounds.max_tools,
                }
                .into());
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(discovery::check(tools, bytes, &self.bounds)?),
            }
        }
        Err(CatalogBoundError::TooManyPages {
            max: self.bounds.max_pages,
        }
        .into())
    }
}
