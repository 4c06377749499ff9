//! Location-scoped tool registry, model catalog, authorization and durable approvals.
