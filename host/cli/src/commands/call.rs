//! `warden call`: one invocation through authorization.

mod content;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use warden_core::ErrorCode;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use warden_core::lane::{Progress, ProgressSink};
use warden_core::{GatePolicy, Origin};
use warden_egress::tape::{self, Recorder, Replay};
use warden_host::{
    ApprovalId, ApprovalRequest, CallFailure, CancellationToken, Invocation, InvokeOutcome,
    Location, Resolution,
};
use warden_registry::{GrantTerms, Rule, ToolFailure};

use super::{Context, EXIT_AUTH_REQUIRED, EXIT_PENDING, EXIT_REPLAY_MISMATCH};
use crate::cli::CallArgs;
use crate::render;

/// Run `warden call`.
pub(crate) async fn run(cx: &Context, args: CallArgs) -> Result<ExitCode> {
    let input = read_input(&args.input)?;
    let tape = Tape::open(&args)?;
    let (_host, location) = cx.open()?;
    // Only the server that provides this tool is asked for its tools; a
    // replay asks no server anything (its catalog is the one kept). The
    // error may quote the server (a tool name it listed): one line, shown.
    if args.replay.is_none() {
        for error in location.refresh_hosted_for(&args.tool).await {
            say!("warning: {}", render::escape(&error.to_string()));
        }
    }
    // Progress on stderr as it comes; Ctrl-C cancels the running call
    // (it ends `cancelled`, audited, the tool stopped).
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    let invocation = tape
        .apply(Invocation::new(
            args.tool.clone(),
            input,
            args.origin.into(),
        ))
        .reporting(ProgressSink::new(show_progress))
        .relaying(std::sync::Arc::new(crate::ask::TerminalRelay))
        .cancelled_by(cancel);
    let outcome = match &args.resume {
        Some(id) => {
            location
                .resume(&ApprovalId(id.clone()), invocation.clone())
                .await?
        }
        None => location.invoke(invocation.clone()).await?,
    };
    let outcome = match outcome {
        InvokeOutcome::NeedsApproval(request) => match decide(&request, args.approve_once)? {
            Some(resolution) => {
                location
                    .answer_and_resume(&request.id, resolution, invocation)
                    .await?
            }
            None => {
                tape.finish(&args.tool)?;
                return Ok(pending(cx, &request));
            }
        },
        other => other,
    };
    // A tool no tape can hold was refused before anything ran: no tape is
    // written (an empty one would replay as nothing at all).
    let untaped = matches!(&outcome, InvokeOutcome::Failed(failure) if failure.code() == ErrorCode::TapeUnsupported);
    let hint = origin_hint(&location, &args.tool, &outcome);
    let code = report(cx, outcome, args.output_dir.as_deref(), hint);
    if untaped {
        return Ok(code);
    }
    Ok(tape.finish(&args.tool)?.unwrap_or(code))
}

/// One progress report, on stderr: `progress: 3/10 step three`.
fn show_progress(progress: Progress) {
    let total = progress.total.map(|t| format!("/{t}")).unwrap_or_default();
    let message = progress
        .message
        .map(|m| format!(" {m}"))
        .unwrap_or_default();
    say!("progress: {}{total}{message}", progress.progress);
}

/// `--record` / `--replay`.
enum Tape {
    Off,
    Record(PathBuf, Arc<Recorder>),
    Replay(Arc<Replay>),
}

impl Tape {
    fn open(args: &CallArgs) -> Result<Self> {
        if let Some(path) = &args.replay {
            let bytes = std::fs::read(path)
                .with_context(|| format!("reading the tape {}", path.display()))?;
            let tape = tape::Tape::from_json(&bytes)
                .with_context(|| format!("{} is not a usable tape", path.display()))?;
            if same_tool(&tape.capability, &args.tool) {
                return Ok(Tape::Replay(Replay::new(tape)));
            }
            anyhow::bail!(
                "{} was recorded for `{}`, not `{}`",
                path.display(),
                tape.capability,
                args.tool
            );
        }
        Ok(match &args.record {
            Some(path) => Tape::Record(path.clone(), Recorder::new()),
            None => Tape::Off,
        })
    }

    fn apply(&self, invocation: Invocation) -> Invocation {
        match self {
            Tape::Off => invocation,
            Tape::Record(_, recorder) => invocation.recording(recorder.clone()),
            Tape::Replay(replay) => invocation.replaying(replay.clone()),
        }
    }

    /// Write the recording, or check the replay: `Some(code)` overrides the
    /// call's exit code when the replay did not match.
    fn finish(&self, tool: &str) -> Result<Option<ExitCode>> {
        match self {
            Tape::Off => Ok(None),
            Tape::Record(path, recorder) => {
                std::fs::write(path, recorder.tape(tool).to_json())
                    .with_context(|| format!("writing the tape {}", path.display()))?;
                Ok(None)
            }
            Tape::Replay(replay) => Ok(replay.finish().err().map(|mismatch| {
                say!("error[replay_mismatch]: {mismatch}");
                ExitCode::from(EXIT_REPLAY_MISMATCH)
            })),
        }
    }
}

/// `github.get_repo` and `github_get_repo` name the same tool.
fn same_tool(a: &str, b: &str) -> bool {
    a.replace('.', "_") == b.replace('.', "_")
}

/// The input text: JSON, `@file` or `@-` (stdin).
fn read_input(arg: &str) -> Result<Value> {
    let text = match arg.strip_prefix('@') {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading the input from stdin")?;
            text
        }
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the input from {path}"))?,
        None => arg.to_owned(),
    };
    serde_json::from_str(&text).context("--input is not valid JSON")
}

/// Ask on the terminal, or approve once for `--approve-once`; `None` leaves it pending.
fn decide(request: &ApprovalRequest, approve_once: bool) -> Result<Option<Resolution>> {
    if approve_once {
        return Ok(Some(Resolution::ApproveOnce));
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    say!(
        "`{}` needs your approval ({}).",
        request.capability_id,
        request.rule
    );
    say!("input: {}", serde_json::to_string_pretty(&request.input)?);
    crate::output::part(
        crate::output::Stream::Err,
        format_args!("Run it? [y]es once / [a]lways in this location / [N]o: "),
    );
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(Some(match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Resolution::ApproveOnce,
        "a" | "always" => Resolution::ApproveAndGrant(GrantTerms::default()),
        _ => Resolution::Deny,
    }))
}

fn pending(cx: &Context, request: &ApprovalRequest) -> ExitCode {
    let how = format!(
        "warden approvals approve {} && warden call ... --resume {}",
        request.id, request.id
    );
    if cx.json {
        render::json(&json!({
            "status": "needs_approval",
            "approval_id": request.id,
            "capability_id": request.capability_id,
            "rule": request.rule.to_string(),
            "how_to_approve": how,
        }));
    } else {
        say!(
            "`{}` needs approval ({}).",
            request.capability_id,
            request.rule
        );
        say!("approval id: {}\nthen: {how}", request.id);
    }
    ExitCode::from(EXIT_PENDING)
}

fn report(
    cx: &Context,
    outcome: InvokeOutcome,
    output_dir: Option<&std::path::Path>,
    hint: Option<String>,
) -> ExitCode {
    match outcome {
        InvokeOutcome::Completed(done) => {
            // A file that cannot be written fails the command, after the
            // result is shown (its data named, not saved) and the tape kept.
            let (saved, unsaved) =
                match content::save(output_dir, &done.capability_id, &done.content) {
                    Ok(saved) => (saved, None),
                    Err(error) => (vec![None; done.content.len()], Some(error)),
                };
            if cx.json {
                let mut value = json!({
                    "status": "ok",
                    "capability_id": done.capability_id,
                    "output": done.output,
                    "truncated": done.truncation.is_some(),
                    "usage": {
                        "fuel": done.usage.fuel_consumed,
                        "peak_memory_bytes": done.usage.peak_memory_bytes,
                        "wall_time_us": done.usage.wall_time.as_micros() as u64,
                        "http_requests": done.usage.http_requests,
                    },
                });
                if !done.content.is_empty() {
                    value["content"] = content::json(&done.content, &saved);
                }
                render::json(&value);
            } else if done.content.is_empty() {
                out!("{}", done.text);
            } else {
                if !done.output.is_null() {
                    out!("{}", done.text);
                }
                for line in content::lines(&done.content, &saved) {
                    out!("{line}");
                }
            }
            match unsaved {
                Some(error) => {
                    say!("error: {error:#}");
                    ExitCode::FAILURE
                }
                None => ExitCode::SUCCESS,
            }
        }
        InvokeOutcome::Failed(failure) => {
            if cx.json {
                let mut value = failure_json(&failure);
                if let Some(hint) = &hint {
                    value["hint"] = json!(hint);
                }
                render::json(&value);
            } else {
                // The guest's or the server's text: one line, shown.
                say!(
                    "error[{}]: {}",
                    failure.code(),
                    render::escape(&failure.message())
                );
                if let Some(auth) = failure.auth_details() {
                    say!("run: {}", auth.connect_command());
                }
                if let Some(hint) = &hint {
                    say!("hint: {}", render::escape(hint));
                }
            }
            if failure.auth_details().is_some() {
                ExitCode::from(EXIT_AUTH_REQUIRED)
            } else {
                ExitCode::FAILURE
            }
        }
        InvokeOutcome::NeedsApproval(request) => {
            // A resumed call never asks again; this is a fresh request.
            pending(cx, &request)
        }
    }
}

/// A failure as JSON; an `auth_required` one carries its fields at the top
/// level (`reason`, `vendor`, `scopes`, `extension`, `connect`) and under `auth`.
/// For a call refused because its origin is forbidden: the origins the
/// tool allows and how to call from one (a person at the terminal is
/// `product`, which most packages built for agents forbid).
fn origin_hint(location: &Location, tool: &str, outcome: &InvokeOutcome) -> Option<String> {
    let InvokeOutcome::Failed(CallFailure::Refused(ToolFailure::Denied {
        rule: Rule::GateForbidden { origin },
    })) = outcome
    else {
        return None;
    };
    let found = location.tool(tool)?;
    let matrix = &found.capability.origin_gate_matrix;
    let allowed: Vec<(Origin, GatePolicy)> = Origin::ALL
        .iter()
        .map(|o| (*o, matrix.policy(*o)))
        .filter(|(_, policy)| *policy != GatePolicy::Forbidden)
        .collect();
    let id = &found.capability.id;
    let Some((first, _)) = allowed.first() else {
        return Some(format!(
            "`{id}` forbids every origin (its origin_gate_matrix allows none)"
        ));
    };
    let listed: Vec<String> = allowed
        .iter()
        .map(|(o, policy)| format!("{o} ({policy})"))
        .collect();
    Some(format!(
        "`{id}` may not be called from origin `{origin}`; it allows {}: pass `--origin {}`",
        listed.join(", "),
        origin_arg(*first)
    ))
}

/// How `--origin` spells `origin` (clap's own spelling of the argument).
fn origin_arg(origin: Origin) -> String {
    use clap::ValueEnum;
    crate::cli::OriginArg::value_variants()
        .iter()
        .find(|arg| Origin::from(**arg) == origin)
        .and_then(|arg| arg.to_possible_value())
        .map(|value| value.get_name().to_owned())
        .unwrap_or_else(|| origin.to_string())
}

fn failure_json(failure: &CallFailure) -> Value {
    let mut value =
        json!({ "status": "failed", "code": failure.code(), "message": failure.message() });
    if let Some(auth) = failure.auth_details() {
        if let (Value::Object(out), Value::Object(fields)) = (&mut value, auth.to_json()) {
            out.extend(fields);
        }
        value["auth"] = json!(auth);
    }
    value
}
