//! `echo.echo`: returns its text unchanged, upper-cased or reversed. No network.

use serde::{Deserialize, Serialize};
use warden_guest::{Call, Failure, IntoOutput, Tool};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    text: String,
    #[serde(default)]
    transform: Transform,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Transform {
    #[default]
    None,
    Upper,
    Lower,
    Reverse,
}

#[derive(Serialize)]
struct Output {
    text: String,
    chars: usize,
}

struct Echo;

impl Tool for Echo {
    fn run(call: &Call) -> Result<impl IntoOutput, Failure> {
        if call.operation() != "echo" {
            return Err(Failure::executor("unknown_operation", format!("echo has no operation `{}`", call.operation())));
        }
        let input: Input = call.input()?;
        let text = match input.transform {
            Transform::None => input.text,
            Transform::Upper => input.text.to_uppercase(),
            Transform::Lower => input.text.to_lowercase(),
            Transform::Reverse => input.text.chars().rev().collect(),
        };
        Ok(Output { chars: text.chars().count(), text })
    }
}

warden_guest::export_tool!(Echo);
