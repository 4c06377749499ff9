//! Resolved surfaces Warden validates but does not run itself:
//! `[admin_configuration]` (the operator form of a bundled package).

/// `[admin_configuration]`: the deployment's configuration form.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AdminConfiguration {
    /// Shared form id (`vendor.google`).
    pub group_id: String,
    /// Form title.
    pub display_name: String,
    /// Help text.
    pub description: String,
    /// The values an operator enters (1 to 64, unique handles).
    pub fields: Vec<AdminField>,
}

/// One `[[admin_configuration.fields]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AdminField {
    /// Key in the secret store (secret) or config store.
    pub handle: String,
    /// Field label.
    pub label: String,
    /// Whether the value goes to the secret store (default false).
    pub secret: bool,
    /// Whether the group is incomplete without it (default false).
    pub required: bool,
    /// Help under the input.
    pub description: String,
    /// Hidden from operators; the host owns the value.
    pub host_managed: bool,
}
