//! [`TerminalRelay`]: a hosted server's elicitation, asked on the terminal
//! of `warden call` and `warden mcp probe` (there is no MCP client to relay
//! it to). A form is asked field by field on stderr, each read as a line of
//! stdin: an empty line takes the field's default (or leaves it out), a
//! value is read as the field's type (and one of its `enum` values when it
//! names some; comma-separated for a list); a value that does not fit is
//! asked again. A URL elicitation prints the URL and waits for Enter. The
//! end of stdin before the form is done cancels it (`action: cancel`), so a
//! script with no input never accepts anything. Sampling is refused: there
//! is no model here; the server can fall back.

use std::io::BufRead;

use serde_json::{Map, Value, json};
use warden_core::lane::{Relay, RelayError};
use warden_core::net::BoxFuture;

/// Asks the person at the terminal.
#[derive(Debug, Default)]
pub(crate) struct TerminalRelay;

impl Relay for TerminalRelay {
    fn elicit(&self, params: Value) -> BoxFuture<'_, Result<Value, RelayError>> {
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                ask(&params, &mut stdin.lock())
            })
            .await
            .map_err(|e| RelayError::Failed(format!("asking on the terminal: {e}")))
        })
    }

    fn sample(&self, _params: Value) -> BoxFuture<'_, Result<Value, RelayError>> {
        Box::pin(async { Err(RelayError::Unsupported) })
    }
}

/// The answer to the elicitation `params`, from `input`'s lines.
fn ask(params: &Value, input: &mut dyn BufRead) -> Value {
    let message = params["message"].as_str().unwrap_or("");
    say!("the server asks: {}", one_line(message));
    if params["mode"] == "url" {
        say!(
            "  open {} then press Enter",
            one_line(params["url"].as_str().unwrap_or(""))
        );
        return match read_line(input) {
            Some(_) => json!({"action": "accept"}),
            None => json!({"action": "cancel"}),
        };
    }
    let empty = Map::new();
    let fields = params["requestedSchema"]["properties"]
        .as_object()
        .unwrap_or(&empty);
    let mut content = Map::new();
    for (name, schema) in fields {
        loop {
            say!("  {}{}:", one_line(name), hint(schema));
            let Some(line) = read_line(input) else {
                return json!({"action": "cancel"});
            };
            let line = line.trim();
            if line.is_empty() {
                if let Some(default) = schema.get("default") {
                    content.insert(name.clone(), default.clone());
                }
                break;
            }
            match read_value(schema, line) {
                Some(value) => {
                    content.insert(name.clone(), value);
                    break;
                }
                None => say!("  that is not a value of this field"),
            }
        }
    }
    json!({"action": "accept", "content": content})
}

/// ` (type, one of a|b) [default]` for the prompt.
fn hint(schema: &Value) -> String {
    let kind = schema["type"].as_str().unwrap_or("string");
    let choices = choices(schema);
    let mut hint = format!(" ({kind}");
    if !choices.is_empty() {
        hint.push_str(&format!(", one of {}", choices.join("|")));
    }
    hint.push(')');
    if let Some(default) = schema.get("default") {
        hint.push_str(&format!(" [{default}]"));
    }
    one_line(&hint)
}

/// The values a field (or a list's item) allows, when it names them.
fn choices(schema: &Value) -> Vec<String> {
    let of = |schema: &Value| -> Vec<String> {
        if let Some(values) = schema["enum"].as_array() {
            return values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
        }
        ["oneOf", "anyOf"]
            .iter()
            .filter_map(|key| schema[*key].as_array())
            .flatten()
            .filter_map(|option| option["const"].as_str().map(str::to_owned))
            .collect()
    };
    match schema["type"].as_str() {
        Some("array") => of(&schema["items"]),
        _ => of(schema),
    }
}

/// `text` read as a value of the field `schema`, if it is one.
fn read_value(schema: &Value, text: &str) -> Option<Value> {
    let allowed = choices(schema);
    let fits = |value: &str| allowed.is_empty() || allowed.iter().any(|a| a == value);
    match schema["type"].as_str() {
        Some("integer") => text.parse::<i64>().ok().map(Value::from),
        Some("number") => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("array") => {
            let items: Vec<&str> = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            items
                .iter()
                .all(|item| fits(item))
                .then(|| Value::from(items.iter().map(|i| Value::from(*i)).collect::<Vec<_>>()))
        }
        _ => fits(text).then(|| Value::from(text)),
    }
}

/// One line of `input` without its line break; `None` at its end.
fn read_line(input: &mut dyn BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

/// `text` with control characters (a server's) shown as spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        json!({"message": "who\u{1b}[2J are you?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "status": {"type": "string", "enum": ["active", "inactive"]},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}]}},
            "verified": {"type": "boolean"}
        }}})
    }

    #[test]
    fn empty_lines_take_the_defaults_and_values_are_read_as_their_type() {
        // Fields come in the schema's key order (sorted): age, name, status, tags, verified.
        let mut input = "\n\nretired\ninactive\na, b\nyes\n".as_bytes();
        let answer = ask(&form(), &mut input);
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {
                "age": 30, "name": "John Doe", "status": "inactive", "tags": ["a", "b"], "verified": true
            }})
        );
    }

    /// A hostile server's field names, defaults and choices cannot move the
    /// terminal's cursor or clear it: the prompt holds no control character.
    #[test]
    fn a_prompt_carries_no_terminal_escape_from_the_server() {
        let schema =
            json!({"type": "string", "default": "\u{1b}[2J", "enum": ["\u{1b}]0;x\u{7}", "b"]});
        let shown = format!("{}{}", one_line("na\u{1b}[1Ame\r"), hint(&schema));
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(shown.contains("na [1Ame"), "{shown:?}");
    }

    #[test]
    fn the_end_of_input_cancels_and_a_url_waits_for_enter() {
        assert_eq!(
            ask(&form(), &mut "\n".as_bytes()),
            json!({"action": "cancel"})
        );
        let url = json!({"mode": "url", "message": "sign in", "url": "https://example.com/x"});
        assert_eq!(ask(&url, &mut "\n".as_bytes()), json!({"action": "accept"}));
        assert_eq!(ask(&url, &mut "".as_bytes()), json!({"action": "cancel"}));
    }
}
