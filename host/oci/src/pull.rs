//! Resolving a reference to its manifest and pulling a package's layers,
//! each checked against its digest before it is returned.

use crate::client::{Request, Signer};
use crate::manifest::{ACCEPT_MANIFEST, ImageManifest};
use crate::{Client, Digest, OciError, Reference};

/// A reference resolved: its manifest, by digest.
#[derive(Debug, Clone)]
pub struct ResolvedManifest {
    /// The reference as it was asked for (a tag, a digest, or both).
    pub asked: Reference,
    /// The reference pinned to the manifest's digest: what a later pull
    /// fetches, whatever the tag points at by then.
    pub reference: Reference,
    /// The manifest's digest.
    pub digest: Digest,
    /// The manifest.
    pub manifest: ImageManifest,
}

/// A package pulled: the manifest and its layers' bytes, every digest checked.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// What was pulled, pinned.
    pub resolved: ResolvedManifest,
    /// The component: its path in the package and its bytes.
    pub module: Option<(String, Vec<u8>)>,
    /// The rest of the package, a `.tar.gz` (for the package reader).
    pub package_layer: Vec<u8>,
}

impl Client {
    /// The manifest `reference` names (by tag or digest), checked: the
    /// digest of what came is the one asked for (and the one the registry
    /// claims), and it is an image manifest of a Warden package.
    pub async fn resolve(&self, reference: &Reference) -> Result<ResolvedManifest, OciError> {
        let signer = self.signer(reference, "pull");
        self.resolve_with(&signer, reference).await
    }

    async fn resolve_with(
        &self,
        signer: &Signer,
        reference: &Reference,
    ) -> Result<ResolvedManifest, OciError> {
        let what = format!("the manifest of {reference}");
        let url = reference.api_url(&format!("manifests/{}", reference.manifest_reference()));
        let request = Request::get(&url, &what, self.bounds.manifest).accept(ACCEPT_MANIFEST);
        let response = self.send(signer, request).await?;
        if response.status != 200 {
            return Err(response.unexpected(&what));
        }
        let digest = Digest::of(&response.body);
        if let Some(asked) = reference.digest()
            && *asked != digest
        {
            return Err(OciError::DigestMismatch {
                what,
                expected: asked.to_string(),
                actual: digest.to_string(),
            });
        }
        if let Some(claimed) = response.header("docker-content-digest")
            && claimed != digest.as_str()
        {
            return Err(OciError::DigestMismatch {
                what,
                expected: crate::shown(claimed),
                actual: digest.to_string(),
            });
        }
        let manifest = ImageManifest::parse(&response.body, response.header("content-type"))?;
        // Checked now, so a resolve says what a pull would refuse.
        manifest.layers(&self.bounds)?;
        Ok(ResolvedManifest {
            asked: reference.clone(),
            reference: reference.pinned(digest.clone()),
            digest,
            manifest,
        })
    }

    /// Resolve `reference` and fetch its layers by digest.
    pub async fn pull(&self, reference: &Reference) -> Result<Pulled, OciError> {
        let signer = self.signer(reference, "pull");
        let resolved = self.resolve_with(&signer, reference).await?;
        self.fetch_layers(&signer, resolved).await
    }

    /// Fetch the layers of an already resolved manifest (what `upgrade`
    /// showed is what it installs, even when the tag moved since).
    pub async fn pull_resolved(&self, resolved: ResolvedManifest) -> Result<Pulled, OciError> {
        let signer = self.signer(&resolved.reference, "pull");
        self.fetch_layers(&signer, resolved).await
    }

    async fn fetch_layers(
        &self,
        signer: &Signer,
        resolved: ResolvedManifest,
    ) -> Result<Pulled, OciError> {
        let layers = resolved.manifest.layers(&self.bounds)?;
        let module = match layers.module {
            Some((path, layer)) => {
                Some((path, self.blob(signer, &resolved.reference, &layer).await?))
            }
            None => None,
        };
        let package_layer = self
            .blob(signer, &resolved.reference, &layers.package)
            .await?;
        Ok(Pulled {
            resolved,
            module,
            package_layer,
        })
    }

    /// A blob by its descriptor: no more than its declared size read, and
    /// its digest checked.
    async fn blob(
        &self,
        signer: &Signer,
        reference: &Reference,
        layer: &crate::manifest::Descriptor,
    ) -> Result<Vec<u8>, OciError> {
        let digest = Digest::parse(&layer.digest)?;
        let what = format!("the `{}` layer {digest}", layer.media_type);
        let url = reference.api_url(&format!("blobs/{digest}"));
        let response = self
            .send(signer, Request::get(&url, &what, layer.size))
            .await?;
        if response.status != 200 {
            return Err(response.unexpected(&what));
        }
        let actual = Digest::of(&response.body);
        if actual != digest {
            return Err(OciError::DigestMismatch {
                what,
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(response.body)
    }
}
