//! What the format has that a host does not run, and how a refusal names it.
//!
//! [`Package::unsupported`](crate::Package::unsupported) lists every reason
//! at once (so a package is never fixed one refusal at a time); the host
//! drops those its operator waived (a `[channel]` surface, for a package
//! whose tools it runs without the channel) and refuses the rest with
//! [`refusal`], one reason per line, each saying what to do where
//! something can be done.

use std::fmt;

/// One surface or mechanism a package declares that this host does not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// A `[channel]` surface: the agent's own inbox and outbox, not a tool.
    Channel,
    /// A `[memory]` provider surface: the agent runtime's memory lane.
    Memory,
    /// A `first_party` service the host has not registered.
    FirstPartyService(String),
    /// A `device_link` auth recipe, by vendor.
    DeviceLink(String),
    /// A credential injection type egress does not perform.
    Injection(&'static str),
}

impl Unsupported {
    /// The reason, for package `package`, with what to do about it: one
    /// line, whatever the package's names hold (a manifest may put a line
    /// break in a nested string; here it would forge a reason of its own).
    pub fn describe(&self, package: &str) -> String {
        let package = &one_line(package);
        match self {
            Unsupported::Channel => format!(
                "a [channel] surface: Warden runs a package's tools, not its channel (the \
                 agent's own inbox); to install the tools alone, list \"{package}\" in \
                 `[packages] tools_without_channel` of warden.toml"
            ),
            Unsupported::Memory => "a [memory] provider surface: memory belongs to the agent \
                 runtime, and Warden does not run the memory lane"
                .to_owned(),
            Unsupported::FirstPartyService(service) => format!(
                "first_party service `{}`, which this host has not registered (an \
                 embedding registers one with `HostBuilder::first_party_service`)",
                one_line(service)
            ),
            Unsupported::DeviceLink(vendor) => format!(
                "the device_link recipe [auth.{}]: Warden connects accounts with OAuth \
                 or an API key",
                one_line(vendor)
            ),
            Unsupported::Injection(kind) => {
                format!("credential injection type `{kind}`, which egress does not perform")
            }
        }
    }
}

/// `text` with its control characters (line breaks included) escaped.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unsupported::Channel => "channel",
            Unsupported::Memory => "memory",
            Unsupported::FirstPartyService(_) => "first_party_service",
            Unsupported::DeviceLink(_) => "device_link",
            Unsupported::Injection(_) => "injection",
        })
    }
}

/// Why a host refuses package `package` for `reasons`: one line each, or
/// `None` when there are none.
pub fn refusal(package: &str, reasons: &[Unsupported]) -> Option<String> {
    if reasons.is_empty() {
        return None;
    }
    let mut text = format!(
        "package `{}` needs what this host does not run:",
        one_line(package)
    );
    for reason in reasons {
        text.push_str("\n  - ");
        text.push_str(&reason.describe(package));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_every_reason_on_a_line_of_its_own() {
        let reasons = [
            Unsupported::Channel,
            Unsupported::FirstPartyService("telegram.extension/v1".into()),
            Unsupported::DeviceLink("telegram".into()),
        ];
        let text = refusal("telegram", &reasons).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(
            lines[0],
            "package `telegram` needs what this host does not run:"
        );
        assert!(lines[1].contains("\"telegram\" in `[packages] tools_without_channel`"));
        assert!(lines[2].contains("`telegram.extension/v1`"));
        assert!(lines[3].contains("[auth.telegram]"));
        assert_eq!(refusal("telegram", &[]), None);
    }

    // A hostile manifest's nested strings may hold line breaks: printed as
    // they are, one would add a reason of its own under the list (seen with
    // `service = "x\n  - all clear"` before names were kept to one line).
    #[test]
    fn a_name_cannot_forge_a_line_of_the_refusal() {
        let reasons = [
            Unsupported::FirstPartyService("x\n  - all clear".into()),
            Unsupported::DeviceLink("v\r\n".into()),
        ];
        let text = refusal("p\n", &reasons).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.contains("`x\\u{a}  - all clear`"), "{text}");
    }
}
