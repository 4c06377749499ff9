//! Host-mediated HTTPS egress, network policy, credential injection, redaction and secret stores.
