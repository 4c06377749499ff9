//! Pushing a package: each blob uploaded unless the registry has it
//! (monolithic when it fits a request, else in chunks), then the manifest
//! under the tag, its digest checked against the registry's.

use crate::client::{Request, Signer};
use crate::manifest::{Artifact, Descriptor, IMAGE_MANIFEST};
use crate::{Client, Digest, OciError, Reference};

const OCTETS: &str = "application/octet-stream";

impl Client {
    /// Push `artifact` to `reference` (a tag); the manifest's digest.
    pub async fn push(
        &self,
        reference: &Reference,
        artifact: &Artifact,
    ) -> Result<Digest, OciError> {
        let Some(tag) = reference.tag() else {
            return Err(OciError::Push {
                reference: reference.to_string(),
                reason: "it names a digest, not a tag to push to".into(),
            });
        };
        if reference.digest().is_some() {
            return Err(OciError::Push {
                reference: reference.to_string(),
                reason: "it pins a digest; push to the tag alone".into(),
            });
        }
        let signer = self.signer(reference, "pull,push");
        let crate::manifest::Layout {
            manifest,
            config,
            blobs,
        } = artifact.layout();
        self.upload(&signer, reference, &manifest.config, &config)
            .await?;
        for (descriptor, bytes) in blobs {
            self.upload(&signer, reference, &descriptor, bytes).await?;
        }
        let json = serde_json::to_vec(&manifest).expect("a manifest serialises");
        let digest = Digest::of(&json);
        let what = format!("pushing the manifest to {reference}");
        let url = reference.api_url(&format!("manifests/{tag}"));
        let request = Request::new("PUT", &url, &what).body(IMAGE_MANIFEST, json);
        let response = self.send(&signer, request).await?;
        if response.status != 201 {
            return Err(response.unexpected(&what));
        }
        if let Some(claimed) = response.header("docker-content-digest")
            && claimed != digest.as_str()
        {
            return Err(OciError::DigestMismatch {
                what,
                expected: digest.to_string(),
                actual: crate::shown(claimed),
            });
        }
        Ok(digest)
    }

    /// Upload one blob unless the repository has it.
    async fn upload(
        &self,
        signer: &Signer,
        reference: &Reference,
        descriptor: &Descriptor,
        bytes: &[u8],
    ) -> Result<(), OciError> {
        let digest = &descriptor.digest;
        let what = format!("uploading the `{}` blob {digest}", descriptor.media_type);
        let exists = self
            .send(
                signer,
                Request::new(
                    "HEAD",
                    &reference.api_url(&format!("blobs/{digest}")),
                    &what,
                ),
            )
            .await?;
        if exists.status == 200 {
            return Ok(());
        }
        let started = self
            .send(
                signer,
                Request::new("POST", &reference.api_url("blobs/uploads/"), &what),
            )
            .await?;
        if started.status != 202 {
            return Err(started.unexpected(&what));
        }
        let mut location = self.upload_url(reference, &started, &what)?;
        // Chunks of at most what one request may carry.
        let chunk = self.max_request_body().max(1);
        if bytes.len() > chunk {
            let mut offset = 0;
            for part in bytes.chunks(chunk) {
                let end = offset + part.len() - 1;
                let request = Request::new("PATCH", location.as_str(), &what)
                    .header("content-range", &format!("{offset}-{end}"))
                    .body(OCTETS, part.to_vec());
                let patched = self.send(signer, request).await?;
                if patched.status != 202 {
                    return Err(patched.unexpected(&what));
                }
                location = self.upload_url(reference, &patched, &what)?;
                offset = end + 1;
            }
        }
        location.query_pairs_mut().append_pair("digest", digest);
        let mut request = Request::new("PUT", location.as_str(), &what);
        if bytes.len() <= chunk {
            request = request.body(OCTETS, bytes.to_vec());
        }
        let done = self.send(signer, request).await?;
        if done.status != 201 {
            return Err(done.unexpected(&what));
        }
        Ok(())
    }

    /// The upload session's URL from a `Location` header (relative to the registry).
    fn upload_url(
        &self,
        reference: &Reference,
        response: &crate::client::Response,
        what: &str,
    ) -> Result<url::Url, OciError> {
        let location = response
            .header("location")
            .ok_or_else(|| OciError::Status {
                what: what.to_owned(),
                status: response.status,
                detail: ": no `Location` for the upload".into(),
            })?;
        let base = url::Url::parse(&reference.api_url("")).expect("a reference is a URL");
        base.join(location).map_err(|_| OciError::Status {
            what: what.to_owned(),
            status: response.status,
            detail: format!(
                ": the upload `Location` `{}` is not a URL",
                crate::shown(location)
            ),
        })
    }
}
