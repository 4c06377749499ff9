//! The closed word lists of the manifest's authorization fields.

use std::fmt;
use std::str::FromStr;

/// A word that is not in the closed list of a vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{word}`; expected one of: {expected}")]
pub struct UnknownWord {
    /// Which vocabulary was asked (`effect`, `origin`, ...).
    pub kind: &'static str,
    /// The word as written.
    pub word: String,
    /// The accepted words, comma separated.
    pub expected: &'static str,
}

/// Declares a closed vocabulary: an enum whose variants map one-to-one to
/// snake_case words, with `as_str`, `ALL`, `FromStr`, `Display` and serde.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident, $kind:literal { $($(#[$vmeta:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every word of the vocabulary, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The manifest word for this value.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(word: &str) -> Result<Self, UnknownWord> {
                match word {
                    $($word => Ok($name::$variant),)+
                    _ => Err(UnknownWord {
                        kind: $kind,
                        word: word.to_owned(),
                        expected: concat!($("`", $word, "` "),+),
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                word.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use vocabulary;

vocabulary! {
    /// Who started an invocation. The gate matrix has one policy per origin.
    Origin, "origin" {
        /// The model, from inside an agent loop.
        LoopRun = "loop_run",
        /// A person acting through the product UI.
        Product = "product",
        /// A scheduled or triggered automation.
        Automation = "automation",
    }
}

vocabulary! {
    /// How an origin may invoke a capability (the seed's origin gate matrix).
    GatePolicy, "gate policy" {
        /// The origin may not invoke the capability; the default for an omitted origin.
        Forbidden = "forbidden",
        /// Every invocation asks; persistent grants are never honored.
        AskAlways = "ask_always",
        /// Asks unless a scoped grant covers the invocation.
        GatedUnlessGranted = "gated_unless_granted",
        /// The origin's own gesture is the consent (product only).
        ConsentSufficient = "consent_sufficient",
        /// No gate. For `loop_run` only on the host's reviewed allowlist.
        Ungated = "ungated",
    }
}

vocabulary! {
    /// The manifest's `default_permission`.
    Permission, "permission" {
        /// Runs without asking when the gate allows it.
        Allow = "allow",
        /// Asks before running.
        Ask = "ask",
        /// Never runs.
        Deny = "deny",
    }
}

vocabulary! {
    /// Who may see a capability.
    Visibility, "visibility" {
        /// Published to the model catalog (the default).
        Model = "model",
        /// Used by host flows only; never shown to or invocable by the model.
        HostInternal = "host_internal",
        /// Reachable through the gateway or API only, never shown to the model.
        Api = "api",
    }
}

vocabulary! {
    /// What a capability may do. Effects drive approvals and annotations.
    Effect, "effect" {
        /// Reads local files.
        ReadFilesystem = "read_filesystem",
        /// Writes local files.
        WriteFilesystem = "write_filesystem",
        /// Deletes local files.
        DeleteFilesystem = "delete_filesystem",
        /// Talks to the network.
        Network = "network",
        /// Uses a host-staged credential.
        UseSecret = "use_secret",
        /// Runs code it was given.
        ExecuteCode = "execute_code",
        /// Starts processes.
        SpawnProcess = "spawn_process",
        /// Invokes another capability (the format's normalizer adds it to every tool).
        DispatchCapability = "dispatch_capability",
        /// Installs, changes or removes an extension.
        ModifyExtension = "modify_extension",
        /// Changes approvals or grants.
        ModifyApproval = "modify_approval",
        /// Changes a spending budget.
        ModifyBudget = "modify_budget",
        /// Writes, mutates, sends, deletes or dispatches at a provider.
        ExternalWrite = "external_write",
        /// Moves money or takes an irreversible financial action.
        Financial = "financial",
    }
}

impl Effect {
    /// Effects that change the world (the repository lint wants them to
    /// default to `ask`; the format itself does not require it).
    pub const fn is_write(self) -> bool {
        matches!(
            self,
            Effect::WriteFilesystem
                | Effect::DeleteFilesystem
                | Effect::ExternalWrite
                | Effect::Financial
                | Effect::ExecuteCode
                | Effect::SpawnProcess
                | Effect::ModifyExtension
                | Effect::ModifyApproval
                | Effect::ModifyBudget
        )
    }

    /// Effects that destroy or irreversibly change state (MCP `destructiveHint`).
    pub const fn is_destructive(self) -> bool {
        matches!(
            self,
            Effect::DeleteFilesystem | Effect::ExternalWrite | Effect::Financial
        )
    }

    /// Effects that always ask, whatever the gate and grants say.
    pub const fn always_asks(self) -> bool {
        matches!(self, Effect::Financial)
    }
}

impl Origin {
    /// The spelling the WIT call context uses (`loop-run`).
    pub const fn wit_name(self) -> &'static str {
        match self {
            Origin::LoopRun => "loop-run",
            Origin::Product => "product",
            Origin::Automation => "automation",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for effect in Effect::ALL {
            assert_eq!(effect.as_str().parse::<Effect>(), Ok(*effect));
        }
        for policy in GatePolicy::ALL {
            assert_eq!(policy.to_string().parse::<GatePolicy>(), Ok(*policy));
        }
    }

    #[test]
    fn unknown_word_names_the_vocabulary() {
        let err = "network_io".parse::<Effect>().unwrap_err();
        assert_eq!(err.kind, "effect");
        assert!(err.to_string().contains("`network`"), "{err}");
    }
}
