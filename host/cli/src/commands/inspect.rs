//! `list`, `describe`, `check`: what is installed and whether packages are valid.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::json;
use warden_core::Origin;
use warden_registry::RegisteredTool;

use super::Context;
use crate::render;

/// `warden list`.
pub(crate) fn list(cx: &Context) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    let snapshot = location.snapshot();
    let tools: Vec<&RegisteredTool> = snapshot.tools().map(|t| t.as_ref()).collect();
    if cx.json {
        render::json(&tools.iter().map(|t| tool_summary(t)).collect::<Vec<_>>());
    } else {
        for tool in tools {
            let def = tool.def();
            println!(
                "{:<28} {:<26} {:<5} effects: {}",
                tool.model_name(),
                def.capability_id(),
                def.default_permission,
                render::words(&def.effects)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn tool_summary(tool: &RegisteredTool) -> serde_json::Value {
    let def = tool.def();
    json!({
        "name": tool.model_name(),
        "capability_id": def.capability_id(),
        "description": def.description,
        "effects": def.effects,
        "default_permission": def.default_permission,
        "visibility": def.visibility,
    })
}

/// `warden describe <tool>`.
pub(crate) fn describe(cx: &Context, tool: &str) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    let packages = location.packages();
    let Some((package, capability)) = packages.iter().find_map(|p| {
        p.capabilities
            .iter()
            .find(|c| c.id == tool || model_name(&p.id, c) == tool)
            .map(|c| (p, c))
    }) else {
        bail!("no tool `{tool}`; `warden list` shows what is installed");
    };
    let gates: serde_json::Map<String, serde_json::Value> = Origin::ALL
        .iter()
        .map(|o| {
            (
                o.as_str().to_owned(),
                json!(capability.origin_gate_matrix.policy(*o)),
            )
        })
        .collect();
    let credentials: Vec<_> = capability
        .credentials
        .iter()
        .map(|c| json!({ "handle": c.handle, "vendor": c.vendor, "scopes": c.scopes, "audience": c.audience }))
        .collect();
    let described = json!({
        "name": model_name(&package.id, capability),
        "capability_id": capability.id,
        "package": { "id": package.id, "version": package.version },
        "description": capability.description,
        "effects": capability.effects,
        "default_permission": capability.default_permission,
        "visibility": capability.visibility,
        "origin_gate_matrix": gates,
        "credentials": credentials,
        "network_targets": capability.network_targets,
        "input_schema": capability.input_schema,
        "output_schema": capability.output_schema,
        "prompt": capability.prompt,
    });
    if cx.json {
        render::json(&described);
    } else {
        render::description(&described);
    }
    Ok(ExitCode::SUCCESS)
}

fn model_name(extension: &str, capability: &warden_manifest::Capability) -> String {
    warden_registry::name::model_name(Some(extension), capability.local_name(extension))
        .unwrap_or_default()
}

/// `warden check [--as bundled|installed|user] <dir>...`: every diagnostic of
/// every package, the review lints as warnings, and a note when this host
/// will not run the package.
pub(crate) fn check(
    cx: &Context,
    dirs: &[PathBuf],
    source: warden_manifest::Source,
) -> Result<ExitCode> {
    let host_options = warden_manifest::ValidationOptions::reviewed().source(source);
    let mut report = Vec::new();
    let mut invalid = 0;
    for dir in dirs {
        match warden_manifest::load_package(dir, &host_options) {
            Ok(package) => {
                let lints = warden_manifest::lints(&package, &host_options);
                let note = package.unsupported_lane(&[]);
                if !cx.json {
                    println!("ok    {}", warden_manifest::summary(&package));
                    for lint in &lints {
                        eprintln!("{lint}");
                    }
                    if let Some(note) = &note {
                        eprintln!("note: {note}; `warden install` will refuse it");
                    }
                }
                report.push(json!({ "dir": dir, "valid": true, "summary": warden_manifest::summary(&package), "warnings": lints, "unsupported": note }));
            }
            Err(diagnostics) => {
                invalid += 1;
                if !cx.json {
                    eprintln!("{diagnostics}");
                }
                let parsed: serde_json::Value =
                    serde_json::from_str(&diagnostics.to_json()).unwrap_or_default();
                report.push(json!({ "dir": dir, "valid": false, "diagnostics": parsed }));
            }
        }
    }
    if cx.json {
        render::json(&report);
    }
    Ok(if invalid == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
