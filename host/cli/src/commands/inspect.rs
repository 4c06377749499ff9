//! `list`, `describe`, `check`: what is installed and whether packages are valid.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use serde_json::json;
use warden_core::Origin;
use warden_host::{HostError, InstalledPackage, Location, PackageSource, Replace};
use warden_registry::RegisteredTool;

use super::Context;
use crate::render;

/// `warden list`.
pub(crate) fn list(cx: &Context) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    let snapshot = location.snapshot();
    let tools: Vec<&RegisteredTool> = snapshot.tools().map(|t| t.as_ref()).collect();
    let packages: BTreeMap<String, InstalledPackage> = location
        .installed()
        .into_iter()
        .map(|p| (p.package.id.clone(), p))
        .collect();
    let package_of = |tool: &RegisteredTool| {
        tool.def()
            .namespace
            .as_ref()
            .and_then(|id| packages.get(id))
    };
    if cx.json {
        let listed: Vec<_> = tools
            .iter()
            .map(|t| tool_summary(t, package_of(t)))
            .collect();
        render::json(&listed);
    } else {
        for tool in tools {
            let def = tool.def();
            let trust = package_of(tool).map_or("?", |p| p.trust.as_str());
            out!(
                "{:<28} {:<26} {:<5} {:<11} effects: {}",
                render::escape(tool.model_name()),
                render::escape(def.capability_id()),
                def.default_permission,
                trust,
                render::words(&def.effects)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn tool_summary(tool: &RegisteredTool, package: Option<&InstalledPackage>) -> serde_json::Value {
    let def = tool.def();
    json!({
        "name": tool.model_name(),
        "capability_id": def.capability_id(),
        "description": def.description,
        "effects": def.effects,
        "default_permission": def.default_permission,
        "visibility": def.visibility,
        "package": package.map(package_identity),
    })
}

/// Who a package is, as the host sees it: id, digest, bundled or
/// installed, and the trust the host gave it.
fn package_identity(package: &InstalledPackage) -> serde_json::Value {
    json!({
        "id": package.package.id,
        "version": package.package.version,
        "digest": package.digest,
        "provenance": package.provenance,
        "trust": package.trust,
        "requested_trust": package.package.requested_trust,
        "signature": package.signature,
        "origin": super::registry::origin_json(package.origin.as_ref()),
    })
}

/// `warden describe <tool>`: the tool as `call` would run it, found among
/// the registered tools by its model name or capability id, exactly (a
/// discovered tool of an `[mcp]` package included, as discovered).
pub(crate) fn describe(cx: &Context, tool: &str) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    let Some(found) = location.tool(tool) else {
        bail!(
            "no tool `{}`; `warden list` shows what is installed",
            render::escape(tool)
        );
    };
    let capability = &found.capability;
    let installed = location.package(&found.package);
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
        "name": found.model_name,
        "capability_id": capability.id,
        "package": installed.as_ref().map(package_identity),
        "world": installed.as_ref().and_then(|p| p.world).map(|w| w.as_str()),
        "description": capability.description,
        "effects": capability.effects,
        "default_permission": capability.default_permission,
        "visibility": capability.visibility,
        "origin_gate_matrix": gates,
        "credentials": credentials,
        "network_targets": capability.network_targets,
        "network": capability.network_targets.iter().map(|t| t.describe()).collect::<Vec<_>>(),
        "standard_op": capability.standard_op.as_deref().and_then(standard_op),
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

/// A bound standard op and the host's schema refs the tool uses.
fn standard_op(name: &str) -> Option<serde_json::Value> {
    let op = warden_manifest::standard::messaging_op(name)?;
    Some(json!({
        "op": op.name,
        "input_schema_ref": op.input_ref(),
        "output_schema_ref": op.output_ref(),
    }))
}

fn model_name(extension: &str, capability: &warden_manifest::Capability) -> String {
    warden_registry::name::model_name(Some(extension), capability.local_name(extension))
        .unwrap_or_default()
}

/// `warden check [--as bundled|installed|user] <path>...`: every diagnostic
/// of every package, the review lints as warnings, and what `install` would
/// refuse here: a lane this host does not run (or a `first_party` service it
/// has not registered), a tool name another package's tool already uses (the
/// built-ins plus what the data dir has installed). An id that is taken is
/// only noted: `install --replace` accepts it.
///
/// Checked as installed (the default), a package (a directory or an
/// archive) then goes through `install` itself on this process's copy of
/// the host, short of the copy into the data directory: read with the
/// installer's options (the module must exist), its component compiled and
/// checked against its world and imports, reviewed and registered. So check
/// says "ok" only for what `install --replace` accepts, and packages checked
/// together are checked against each other as if installed in turn.
pub(crate) fn check(
    cx: &Context,
    paths: &[PathBuf],
    source: warden_manifest::Source,
) -> Result<ExitCode> {
    let host_options = warden_manifest::ValidationOptions::reviewed().source(source);
    let as_installed = source == warden_manifest::Source::Installed;
    let mut effective: Option<Location> = None;
    let mut report = Vec::new();
    let mut invalid = 0;
    for path in paths {
        let from = PackageSource::from_path(path);
        let manifest = match read_manifest(path, &from, &host_options) {
            Ok(manifest) => manifest,
            Err(error) => {
                // An archive the installer's reader refuses before its manifest.
                invalid += 1;
                if !cx.json {
                    say!("error: {}: {}", path.display(), render::escape(&error));
                }
                report.push(json!({ "dir": path, "valid": false, "conflicts": [error] }));
                continue;
            }
        };
        match manifest {
            Ok(package) => {
                let location = opened(cx, &mut effective)?;
                let summary = warden_manifest::summary(&package);
                let mut conflicts = install_conflicts(&location, &package);
                let taken = location.package(&package.id).map(|p| p.provenance);
                let lints = warden_manifest::lints(&package, &host_options);
                // Install refuses a lane this host does not run (or a
                // first_party service it has not registered): so does check.
                let note = location.lane_refusal(&package);
                if let Some(note) = &note {
                    conflicts.push(note.clone());
                }
                // Diagnostics only the installer's options find (the module
                // must exist, the host's own allowlist).
                let mut found = None;
                if as_installed {
                    if conflicts.is_empty() {
                        // `install --replace` on this process's copy of the
                        // host: nothing is written to the data directory
                        // (the compiled component is cached, as an install's).
                        let installed = match location.load_package(&from) {
                            Ok(loaded) => location.install_loaded(loaded, Replace::Yes).map(drop),
                            Err(error) => Err(error),
                        };
                        match installed {
                            Ok(_) => {}
                            Err(HostError::Manifest { diagnostics, .. }) => {
                                found = Some(diagnostics);
                            }
                            Err(error) => conflicts.push(error.to_string()),
                        }
                    }
                } else {
                    // What the installer's reader refuses (links, sizes, an
                    // incomplete SHA256SUMS); a module not built yet is for
                    // `bundle`.
                    match warden_host::load_package(&from, &host_options) {
                        Ok(_)
                        | Err(HostError::MissingModule { .. } | HostError::Manifest { .. }) => {}
                        Err(error) => conflicts.push(error.to_string()),
                    }
                }
                let valid = conflicts.is_empty() && found.is_none();
                if !cx.json {
                    if valid {
                        out!("ok    {}", render::escape(&summary));
                    } else {
                        invalid += 1;
                        for conflict in &conflicts {
                            // Only the refusal is several lines (its names kept
                            // to one line each); any other text stays on one.
                            let refusal = note.as_ref() == Some(conflict);
                            let conflict = render::escape_text(conflict, refusal);
                            say!("error: {}: {conflict}", path.display());
                        }
                        if let Some(diagnostics) = &found {
                            say!("{diagnostics}");
                        }
                    }
                    for lint in &lints {
                        say!("{lint}");
                    }
                    if let Some(provenance) = taken {
                        out!(
                            "      note: a {} package `{}` is installed; `warden install --replace` replaces it",
                            provenance.as_str(),
                            package.id
                        );
                    }
                }
                if cx.json && !valid {
                    invalid += 1;
                }
                let found: Option<serde_json::Value> =
                    found.and_then(|d| serde_json::from_str(&d.to_json()).ok());
                report.push(json!({
                    "dir": path, "valid": valid, "summary": summary,
                    "conflicts": conflicts, "replaces": taken,
                    "warnings": lints, "unsupported": note, "diagnostics": found,
                }));
            }
            Err(diagnostics) => {
                invalid += 1;
                // Every reason install would refuse it, at once: the lanes
                // this host does not run too, read past the source tier.
                let past_tier = host_options
                    .clone()
                    .source(warden_manifest::Source::Bundled);
                let note = match read_manifest(path, &from, &past_tier) {
                    Ok(Ok(package)) => opened(cx, &mut effective)?.lane_refusal(&package),
                    _ => None,
                };
                if !cx.json {
                    say!("{diagnostics}");
                    if let Some(note) = &note {
                        let note = render::escape_text(note, true);
                        say!("error: {}: {note}", path.display());
                    }
                }
                let parsed: serde_json::Value =
                    serde_json::from_str(&diagnostics.to_json()).unwrap_or_default();
                report.push(json!({
                    "dir": path, "valid": false, "diagnostics": parsed, "unsupported": note,
                }));
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

/// The Location check installs into, opened on first use.
fn opened(cx: &Context, effective: &mut Option<Location>) -> Result<Location> {
    Ok(match effective {
        Some(location) => location.clone(),
        None => effective.insert(cx.open()?.1).clone(),
    })
}

/// The manifest of a package, or its diagnostics. A directory is read by
/// the manifest layer (which reports every problem with its line); an
/// archive by the installer's reader, whose own refusals (an entry outside
/// the package, no complete `SHA256SUMS`) come back as the outer error.
fn read_manifest(
    path: &std::path::Path,
    from: &PackageSource,
    options: &warden_manifest::ValidationOptions,
) -> Result<Result<warden_manifest::Package, warden_manifest::Diagnostics>, String> {
    match from {
        PackageSource::Archive(_) => match warden_host::load_package(from, options) {
            Ok(loaded) => Ok(Ok(loaded.package)),
            Err(HostError::Manifest { diagnostics, .. }) => Ok(Err(*diagnostics)),
            // Read again by the install below, which requires it.
            Err(HostError::MissingModule { .. }) => {
                let options = options.clone().require_module(false);
                match warden_host::load_package(from, &options) {
                    Ok(loaded) => Ok(Ok(loaded.package)),
                    Err(error) => Err(error.to_string()),
                }
            }
            Err(error) => Err(error.to_string()),
        },
        _ => Ok(warden_manifest::load_package(path, options)),
    }
}

/// The tools of `package` whose model names another package's active tool
/// already has (the registry would refuse them at install).
fn install_conflicts(location: &Location, package: &warden_manifest::Package) -> Vec<String> {
    let snapshot = location.snapshot();
    // Install refuses a recipe incompatible with an installed package's of
    // the same vendor: so does check.
    let recipe = location.vendor_conflict(package).map(|e| e.to_string());
    let tools = package
        .capabilities
        .iter()
        .filter_map(|capability| {
            let name = model_name(&package.id, capability);
            let existing = snapshot.lookup(&name)?;
            let owner = existing.def().namespace.clone().unwrap_or_default();
            (owner != package.id).then(|| {
                format!(
                    "tool `{}` would be published as `{name}`, which `{}` of package `{owner}` already uses",
                    capability.id,
                    existing.def().capability_id()
                )
            })
        });
    recipe.into_iter().chain(tools).collect()
}
