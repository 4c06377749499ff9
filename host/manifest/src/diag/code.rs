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
    Runtime = "runtime", "use kind = \"wasm\" with a package-relative `module`, or kind = \"first_party\" with a `service`";
    /// The wasm module does not exist.
    ModuleMissing = "module_missing", "build the package (cargo xtask bundle) so the module exists";
    /// The extension id breaks the id charset.
    InvalidId = "invalid_id", "use lowercase ASCII letters, digits, `_`, `-` and `.` (no `..`, no slashes)";
    /// A capability id is not `<extension_id>.<name>` or breaks the charset.
    CapabilityId = "capability_id", "name the tool `<extension_id>.<name>` with lowercase letters, digits, `_` or `-`";
    /// Two tools share an id.
    DuplicateCapability = "duplicate_capability", "give every tool a distinct id";
    /// An effect outside the vocabulary.
    UnknownEffect = "unknown_effect", "use effects from the v3 vocabulary";
    /// An effect listed twice.
    DuplicateEffect = "duplicate_effect", "list each effect once";
    /// Credentials without `use_secret`.
    CredentialRequiresUseSecret = "credential_requires_use_secret", "add \"use_secret\" to effects, or remove the credentials";
    /// Egress declarations without `network`.
    RequiresNetwork = "requires_network", "add \"network\" to effects";
    /// A credential vendor without a recipe.
    MissingAuthRecipe = "missing_auth_recipe", "add an [auth.<vendor>] recipe (method = \"oauth2_code\", \"api_key\" or \"device_link\")";
    /// A recipe no credential references.
    UnusedAuthRecipe = "unused_auth_recipe", "remove the recipe or reference its vendor from a credential";
    /// A credential audience that is not HTTPS with a literal host.
    Audience = "audience", "use audience = { scheme = \"https\", host = \"api.example.com\" } with a literal host (no wildcard)";
    /// A malformed injection.
    Injection = "injection", "use injection = { type = \"header\", name = \"authorization\", prefix = \"Bearer \" } (or query_param, path_placeholder, basic, body_json_pointer, vapid_authorization)";
    /// A handle declared twice in one tool.
    DuplicateHandle = "duplicate_handle", "declare each credential handle once per tool";
    /// A handle or vendor name outside the charset.
    InvalidName = "invalid_name", "use 1-128 bytes of lowercase ASCII letters, digits, `_`, `-` and `.`, starting with a letter or digit";
    /// A malformed network target.
    NetworkTarget = "network_target", "use { scheme = \"https\", host_pattern = \"api.example.com\" } (`*` or a leading `*.` are the only wildcards)";
    /// A limit out of range.
    Limit = "limit", "use a non-negative integer in range";
    /// A ref that is not a package-relative path.
    RefPath = "ref_path", "use a relative path inside the package of ASCII letters, digits, `.`, `_`, `-` and `/`, without `..`";
    /// A ref whose file does not exist.
    RefMissing = "ref_missing", "add the file to the package, or fix the ref";
    /// A tool without its input schema.
    MissingAsset = "missing_asset", "add input_schema_ref (every tool needs one unless it binds a standard_op)";
    /// A schema file over 64 KiB.
    SchemaTooLarge = "schema_too_large", "keep schema files under 64 KiB";
    /// Schemas and prompt docs referenced past the package's budget (each
    /// reference counted).
    ReferencesTooLarge = "references_too_large", "a package may reference at most 4 MiB of schemas and prompt docs, each reference counted: name fewer or smaller files";
    /// A schema that is not JSON or not a valid JSON Schema.
    SchemaInvalid = "schema_invalid", "fix the schema file so it parses as JSON and compiles as JSON Schema";
    /// A prompt doc over 16 KiB.
    PromptTooLarge = "prompt_too_large", "keep prompt docs under 16 KiB";
    /// A prompt doc that is not UTF-8.
    PromptNotUtf8 = "prompt_not_utf8", "save the prompt doc as UTF-8";
    /// An MCP server URL the host will not use.
    McpEndpoint = "mcp_endpoint", "use an https:// URL with a host, without userinfo, wildcard or fragment";
    /// `max_tools` below one.
    McpMaxTools = "mcp_max_tools", "set max_tools to 1 or more";
    /// A recipe endpoint that is not plain HTTPS.
    AuthEndpoint = "auth_endpoint", "use an https:// URL with a host, without userinfo, wildcard or fragment";
    /// A recipe that sets a parameter the host owns.
    ReservedAuthorizeParam = "reserved_authorize_param", "remove it; the host sets state, redirect_uri, code, PKCE, client_id/secret, response_type and the scope parameter";
    /// A token-response or identity pointer that is not a bounded JSON pointer.
    JsonPointer = "json_pointer", "use a JSON pointer such as \"/access_token\" (at most 8 tokens, none empty, no `*`)";
    /// A control character in manifest text or a prompt doc.
    ControlCharacter = "control_character", "remove the control character; only newlines and tabs are allowed in text";
    /// A field or id prefix this package source may not use.
    SourceTier = "source_tier", "remove it; bundled-only and user-only features depend on where the package comes from";
    /// A `standard_op` that is unknown, reserved or bound against its rules.
    StandardOp = "standard_op", "bind one of the format's standard ops, with id `<id>.<op>` and no schema refs";
    /// A pinned tool of an `[mcp]` manifest that declares what it inherits.
    McpPinnedTool = "mcp_pinned_tool", "pinned tools declare id, description, default_permission, input_schema_ref (and visibility, prompt_doc_ref)";
    /// `[mcp].namespace` differs from the extension id.
    McpNamespace = "mcp_namespace", "set namespace to the extension id";
    /// `[memory]` without a first_party runtime.
    Memory = "memory", "a [memory] surface needs [runtime] kind = \"first_party\"";
    /// A recipe that breaks a recipe rule (fields, probe handle, device_link count).
    AuthRecipe = "auth_recipe", "fix the recipe as the message says";
    /// A blank, padded or repeated scope.
    Scope = "scope", "write each scope once, without surrounding whitespace";
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
