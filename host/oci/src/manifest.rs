//! The artifact layout: an OCI image manifest in the CNCF Wasm OCI artifact
//! shape (config `application/vnd.wasm.config.v0+json`, the component as an
//! `application/wasm` layer), so a generic Wasm client (`wkg`, Wassette)
//! pulls the component, plus one layer of Warden's own media type holding
//! the rest of the package (`manifest.toml`, `SHA256SUMS`, schemas,
//! prompts, its signature) as a `.tar.gz`. A package without a component
//! (`[mcp]`, `first_party`) has the empty config and the package layer only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Digest, OciError};

/// An OCI image manifest.
pub const IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index (a multi-platform image; never a Warden package).
pub const IMAGE_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The Wasm OCI artifact's config.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The Wasm OCI artifact's component layer.
pub const WASM_LAYER: &str = "application/wasm";
/// The empty config of an artifact without a component.
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
/// Warden's layer: the package without its component, as a `.tar.gz`.
pub const PACKAGE_LAYER: &str = "application/vnd.warden.package.v1.tar+gzip";
/// The manifest's `artifactType`: what the artifact is, for registries and
/// clients that list by type.
pub const PACKAGE_ARTIFACT: &str = "application/vnd.warden.package.v1";
/// The annotation naming a layer's file (the component's path in the package).
pub const TITLE: &str = "org.opencontainers.image.title";
/// The annotation with the package id, on the manifest.
pub const PACKAGE_ID: &str = "dev.warden.package.id";

/// What `Accept` says when fetching a manifest.
pub(crate) const ACCEPT_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json;q=0.5, \
     application/vnd.docker.distribution.manifest.v2+json;q=0.4";

/// An image manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`IMAGE_MANIFEST`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// [`PACKAGE_ARTIFACT`] for a Warden package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Manifest annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The blob's media type.
    pub media_type: String,
    /// Its digest (`sha256:`).
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// The descriptor of `bytes`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        Descriptor {
            media_type: media_type.to_owned(),
            digest: Digest::of(bytes).to_string(),
            size: bytes.len() as u64,
            annotations: BTreeMap::new(),
        }
    }
}

/// A package as it travels: the component (its path in the package and its
/// bytes), when it has one, and the rest of the package as a `.tar.gz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The package id (an annotation; the package's own manifest decides).
    pub package_id: String,
    /// The component: its path in the package and its bytes.
    pub module: Option<(String, Vec<u8>)>,
    /// The other files, as a `.tar.gz`.
    pub package_layer: Vec<u8>,
}

/// The Wasm OCI artifact config for a component layer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig<'a> {
    architecture: &'a str,
    os: &'a str,
    layer_digests: Vec<String>,
}

/// An artifact as a registry stores it.
#[derive(Debug)]
pub struct Layout<'a> {
    /// The manifest.
    pub manifest: ImageManifest,
    /// The config blob.
    pub config: Vec<u8>,
    /// The layers' descriptors and bytes.
    pub blobs: Vec<(Descriptor, &'a [u8])>,
}

impl Artifact {
    /// The manifest, config and layers of this artifact. Deterministic: the
    /// same package is the same manifest, wherever it is pushed.
    pub fn layout(&self) -> Layout<'_> {
        let package = Descriptor::of(PACKAGE_LAYER, &self.package_layer);
        let (config_type, config) = match &self.module {
            Some((_, bytes)) => {
                let config = WasmConfig {
                    architecture: "wasm",
                    os: "wasip2",
                    layer_digests: vec![Digest::of(bytes).to_string()],
                };
                let json = serde_json::to_vec(&config).expect("a config serialises");
                (WASM_CONFIG, json)
            }
            None => (EMPTY_CONFIG, b"{}".to_vec()),
        };
        let mut layers = Vec::new();
        let mut blobs = Vec::new();
        if let Some((path, bytes)) = &self.module {
            let mut layer = Descriptor::of(WASM_LAYER, bytes);
            layer.annotations.insert(TITLE.into(), path.clone());
            layers.push(layer.clone());
            blobs.push((layer, bytes.as_slice()));
        }
        layers.push(package.clone());
        blobs.push((package, self.package_layer.as_slice()));
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(IMAGE_MANIFEST.into()),
            artifact_type: Some(PACKAGE_ARTIFACT.into()),
            config: Descriptor::of(config_type, &config),
            layers,
            annotations: BTreeMap::from([(PACKAGE_ID.into(), self.package_id.clone())]),
        };
        Layout {
            manifest,
            config,
            blobs,
        }
    }
}

/// Bounds on what a pull reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullBounds {
    /// The manifest (the distribution spec's recommended 4 MiB).
    pub manifest: u64,
    /// The component layer.
    pub module: u64,
    /// The package layer (compressed).
    pub package: u64,
}

impl Default for PullBounds {
    fn default() -> Self {
        PullBounds {
            manifest: 4 << 20,
            module: 32 << 20,
            package: 64 << 20,
        }
    }
}

/// The layers of a Warden package's manifest, checked: the component layer
/// (at most one, with its path) and the package layer (exactly one), each
/// within its bound; any other media type is refused.
#[derive(Debug)]
pub(crate) struct Layers {
    pub(crate) module: Option<(String, Descriptor)>,
    pub(crate) package: Descriptor,
}

impl ImageManifest {
    /// Parse a manifest `bytes` the registry served as `content_type`.
    pub(crate) fn parse(bytes: &[u8], content_type: Option<&str>) -> Result<Self, OciError> {
        let bad = |reason: String| OciError::Manifest { reason };
        // The media type says what the document is; an index, a Docker
        // manifest or anything else is not a Warden package.
        let declared: Option<String> = serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|v| v.get("mediaType")?.as_str().map(str::to_owned));
        let media_type = declared
            .as_deref()
            .or(content_type.map(|c| c.split(';').next().unwrap_or_default().trim()));
        match media_type {
            Some(IMAGE_MANIFEST) | None => {}
            Some(IMAGE_INDEX) => {
                return Err(OciError::MediaType {
                    what: "the manifest".into(),
                    media_type: IMAGE_INDEX.into(),
                    expected: "an image manifest (an image index is not a Warden package)".into(),
                });
            }
            Some(other) => {
                return Err(OciError::MediaType {
                    what: "the manifest".into(),
                    media_type: crate::shown(other),
                    expected: IMAGE_MANIFEST.into(),
                });
            }
        }
        let manifest: ImageManifest = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("is not an OCI image manifest: {e}")))?;
        if manifest.schema_version != 2 {
            return Err(bad(format!(
                "has schemaVersion {}; 2 is the only one",
                manifest.schema_version
            )));
        }
        Ok(manifest)
    }

    /// The checked layers of a package manifest.
    pub(crate) fn layers(&self, bounds: &PullBounds) -> Result<Layers, OciError> {
        if !matches!(self.config.media_type.as_str(), WASM_CONFIG | EMPTY_CONFIG) {
            return Err(OciError::MediaType {
                what: "the config".into(),
                media_type: crate::shown(&self.config.media_type),
                expected: format!("{WASM_CONFIG} or {EMPTY_CONFIG}"),
            });
        }
        let mut module = None;
        let mut package = None;
        for layer in &self.layers {
            Digest::parse(&layer.digest)?;
            let (bound, slot_taken) = match layer.media_type.as_str() {
                WASM_LAYER => (bounds.module, module.is_some()),
                PACKAGE_LAYER => (bounds.package, package.is_some()),
                other => {
                    return Err(OciError::MediaType {
                        what: "a layer".into(),
                        media_type: crate::shown(other),
                        expected: format!("{WASM_LAYER} or {PACKAGE_LAYER}"),
                    });
                }
            };
            if slot_taken {
                return Err(OciError::Manifest {
                    reason: format!("has more than one `{}` layer", layer.media_type),
                });
            }
            if layer.size > bound {
                return Err(OciError::TooLarge {
                    what: format!("the `{}` layer ({} bytes)", layer.media_type, layer.size),
                    limit: bound,
                });
            }
            if layer.media_type == WASM_LAYER {
                let path = layer
                    .annotations
                    .get(TITLE)
                    .ok_or_else(|| OciError::Manifest {
                        reason: format!("its `{WASM_LAYER}` layer has no `{TITLE}` annotation"),
                    })?;
                module = Some((path.clone(), layer.clone()));
            } else {
                package = Some(layer.clone());
            }
        }
        let package = package.ok_or_else(|| OciError::Manifest {
            reason: format!("has no `{PACKAGE_LAYER}` layer: not a Warden package"),
        })?;
        Ok(Layers { module, package })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact() -> Artifact {
        Artifact {
            package_id: "echo".into(),
            module: Some(("echo.wasm".into(), b"\0asm component".to_vec())),
            package_layer: b"tar.gz bytes".to_vec(),
        }
    }

    #[test]
    fn a_component_package_is_a_wasm_artifact_plus_warden_s_layer() {
        let artifact = artifact();
        let Layout {
            manifest,
            blobs,
            config,
        } = artifact.layout();
        assert_eq!(manifest.config.media_type, WASM_CONFIG);
        let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(config["architecture"], "wasm");
        assert_eq!(config["layerDigests"][0], manifest.layers[0].digest);
        assert_eq!(manifest.layers[0].media_type, WASM_LAYER);
        assert_eq!(manifest.layers[0].annotations[TITLE], "echo.wasm");
        assert_eq!(manifest.layers[1].media_type, PACKAGE_LAYER);
        assert_eq!(blobs.len(), 2);
        // Deterministic: the same package, the same manifest.
        assert_eq!(artifact.clone().layout().manifest, manifest);

        let json = serde_json::to_vec(&manifest).unwrap();
        let parsed = ImageManifest::parse(&json, None).unwrap();
        let layers = parsed.layers(&PullBounds::default()).unwrap();
        assert_eq!(layers.module.unwrap().0, "echo.wasm");
    }

    #[test]
    fn refuses_indexes_unknown_media_types_and_layers_over_their_bound() {
        let manifest = artifact().layout().manifest;
        let mut index = serde_json::to_value(&manifest).unwrap();
        index["mediaType"] = IMAGE_INDEX.into();
        let error = ImageManifest::parse(&serde_json::to_vec(&index).unwrap(), None).unwrap_err();
        assert!(error.to_string().contains("image index"), "{error}");

        let mut odd = manifest.clone();
        odd.layers[1].media_type = "application/x-shellscript".into();
        let error = odd.layers(&PullBounds::default()).unwrap_err().to_string();
        assert!(error.contains("application/x-shellscript"), "{error}");

        let small = PullBounds {
            module: 4,
            ..PullBounds::default()
        };
        let error = manifest.layers(&small).unwrap_err().to_string();
        assert!(
            error.contains("application/wasm") && error.contains("4"),
            "{error}"
        );

        let mut bare = manifest.clone();
        bare.layers.pop();
        let error = bare.layers(&PullBounds::default()).unwrap_err().to_string();
        assert!(error.contains("not a Warden package"), "{error}");

        let docker = ImageManifest::parse(
            br#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json"}"#,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(docker.contains("docker"), "{docker}");
    }
}
