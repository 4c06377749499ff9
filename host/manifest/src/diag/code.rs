//! Stable rule codes, each with the help line shown when a rule fails.

/// Declares [`Code`] with its stable name and default help line.
macro_rules! codes {
    ($($(#[$meta:meta])* $variant:ident = $name:literal, $help:literal;)+) => {
        /// The stable code of a manifest rule. Tools match on it; the string
        /// form ([`Code::as_str`]) is what JSON output and golden files carry.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Code {
            $($(#[$meta])* $variant),+
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The stable snake_case name of the code.
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name),+ }
            }

            /// What to do when this rule fails (the default help line).
            pub const fn help(self) -> &'static str {
                match self { $(Code::$variant => $help),+ }
            }
        }
    };
}

codes! {
    /// The manifest is not valid TOML.
    TomlSyntax = "toml_syntax", "fix the TOML syntax at this position";
    /// The manifest file is larger than the host accepts.
    ManifestTooLarge = "manifest_too_large", "keep manifest.toml small; move long text into prompt docs";
    /// The manifest is not UTF-8.
    ManifestNotUtf8 = "manifest_not_utf8", "save manifest.toml as UTF-8";
    /// The manifest could not be read.
    ManifestUnreadable = "manifest_unreadable", "check that manifest.toml exists and is readable";
    /// A field the format does not define.
    UnknownField = "unknown_field", "remove the field or fix its spelling; unknown fields are rejected";
    /// A required field is absent.
    MissingField = "missing_field", "add the field";
    /// A value of the wrong TOML type.
    WrongType = "wrong_type", "use a value of the expected type";
    /// A word outside a closed vocabulary.
    UnknownValue = "unknown_value", "use one of the listed values";
    /// A text field that must not be empty.
    EmptyValue = "empty_value", "write a non-empty value";
    /// `schema_version` is not the v3 contract.
    SchemaVersion = "schema_version", "set schema_version = \"reborn.extension_manifest.v3\"";
    /// A legacy v2 shape.
    LegacyShape = "legacy_shape", "declare tools as [[tools]] entries, each with an origin_gate_matrix";
    /// Not exactly one implementation.
    Implementation = "implementation", "declare exactly one of [runtime] (kind = \"wasm\" or \"first_party\") or [mcp]";
    /// `[runtime]` is inconsistent.
    Runtime = "runtime", "use kind = \"wasm\" with a package-relative `module`, or kind = \"first_party\" without one";
    /// The wasm module does not exist.
    ModuleMissing = "module_missing", "build the package (cargo xtask bundle) so the module exists";
    /// A runtime package declares no tool.
    NoTools = "no_tools", "declare at least one [[tools]] entry";
    /// The extension id breaks the id charset.
    InvalidId = "invalid_id", "use lowercase ASCII letters, digits, `_`, `-` and `.` (no `..`, no slashes)";
    /// The version is not `MAJOR.MINOR.PATCH`.
    InvalidVersion = "invalid_version", "use a semantic version such as \"0.1.0\"";
    /// A capability id is not `<extension_id>.<name>` or breaks the charset.
    CapabilityId = "capability_id", "name the tool `<extension_id>.<name>` with lowercase letters, digits, `_` or `-`";
    /// Two tools share an id.
    DuplicateCapability = "duplicate_capability", "give every tool a distinct id";
    /// An effect outside the vocabulary.
    UnknownEffect = "unknown_effect", "use effects from the v3 vocabulary";
    /// An effect listed twice.
    DuplicateEffect = "duplicate_effect", "list each effect once";
    /// A write effect with a permission other than `ask`.
    WriteRequiresAsk = "write_requires_ask", "set default_permission = \"ask\" for capabilities with write effects";
    /// Credentials without `use_secret`.
    CredentialRequiresUseSecret = "credential_requires_use_secret", "add \"use_secret\" to effects, or remove the credentials";
    /// Egress declarations without `network`.
    RequiresNetwork = "requires_network", "add \"network\" to effects";
    /// No gate matrix, or no `loop_run` policy.
    GateMatrix = "gate_matrix", "declare origin_gate_matrix = { loop_run = \"gated_unless_granted\", ... }";
    /// `consent_sufficient` for an origin other than product.
    ConsentSufficient = "consent_sufficient", "consent_sufficient is valid for `product` only; use gated_unless_granted or ask_always";
    /// `ungated` for `loop_run` on a capability the host has not allowlisted.
    UngatedLoopRun = "ungated_loop_run", "use gated_unless_granted; ungated loop_run needs a reviewed host allowlist entry";
    /// A credential vendor without a recipe.
    MissingAuthRecipe = "missing_auth_recipe", "add an [auth.<vendor>] recipe (method = \"oauth2_code\" or \"api_key\")";
    /// A recipe no credential references.
    UnusedAuthRecipe = "unused_auth_recipe", "remove the recipe or reference its vendor from a credential";
    /// A credential audience that is not HTTPS with a literal host.
    Audience = "audience", "use audience = { scheme = \"https\", host = \"api.example.com\" } with a literal lowercase host";
    /// A malformed injection.
    Injection = "injection", "use injection = { type = \"header\", name = \"authorization\", prefix = \"Bearer \" } (or query / path_placeholder)";
    /// A handle declared twice in one tool.
    DuplicateHandle = "duplicate_handle", "declare each credential handle once per tool";
    /// One handle declared with different settings in two places.
    HandleConflict = "handle_conflict", "use one vendor, audience and injection per handle, or rename one handle";
    /// A handle or vendor name outside the charset.
    InvalidName = "invalid_name", "use lowercase ASCII letters, digits, `_` and `-`";
    /// A malformed network target.
    NetworkTarget = "network_target", "use { scheme = \"https\", host_pattern = \"api.example.com\" } (a leading `*.` label is the only wildcard)";
    /// A limit out of range.
    Limit = "limit", "use a positive integer";
    /// A ref that is not a package-relative path.
    RefPath = "ref_path", "use a relative path inside the package, with `/` separators and no `..`";
    /// A ref whose file does not exist.
    RefMissing = "ref_missing", "add the file to the package, or fix the ref";
    /// A model-visible tool without its schema or prompt.
    MissingAsset = "missing_asset", "model-visible tools need input_schema_ref (unless standard_op) and prompt_doc_ref";
    /// A schema file over 64 KiB.
    SchemaTooLarge = "schema_too_large", "keep schema files under 64 KiB";
    /// A schema that is not JSON or not a valid JSON Schema.
    SchemaInvalid = "schema_invalid", "fix the schema file so it parses as JSON and compiles as JSON Schema";
    /// An input schema whose root is not an object schema.
    InputSchemaNotObject = "input_schema_not_object", "give input schemas \"type\": \"object\" at the root";
    /// A prompt doc over 16 KiB.
    PromptTooLarge = "prompt_too_large", "keep prompt docs under 16 KiB";
    /// A prompt doc that is not UTF-8.
    PromptNotUtf8 = "prompt_not_utf8", "save the prompt doc as UTF-8";
    /// An MCP server URL the host will not use.
    McpEndpoint = "mcp_endpoint", "use an https:// URL with a host and path, without userinfo, query or fragment";
    /// `max_tools` below one.
    McpMaxTools = "mcp_max_tools", "set max_tools to 1 or more";
    /// A recipe endpoint that is not plain HTTPS.
    AuthEndpoint = "auth_endpoint", "use an https:// URL without userinfo or fragment";
    /// A recipe that sets a parameter the host owns.
    ReservedAuthorizeParam = "reserved_authorize_param", "remove it; the host sets state, redirect_uri, PKCE, client_id, response_type and scope";
    /// A token-response pointer that is not a JSON pointer.
    JsonPointer = "json_pointer", "use a JSON pointer such as \"/access_token\"";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_helpful() {
        let mut names: Vec<_> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
        assert!(Code::ALL.iter().all(|c| !c.help().is_empty()));
    }
}
