//! A registry answering from a table of paths, through a real egress.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use warden_egress::Egress;
use warden_egress::secrets::MemoryStore;
use warden_egress::testing::{RecordedRequest, TestCa, TestResponse, TestServer, config};
use warden_oci::manifest::ImageManifest;
use warden_oci::{Artifact, Client, Digest, Reference, StaticLogins};

pub(crate) const HOST: &str = "registry.example.com";

/// The answers by `METHOD path` (query left out).
pub(crate) type Routes = Arc<Mutex<BTreeMap<String, TestResponse>>>;

pub(crate) struct Fake {
    pub(crate) server: TestServer,
    pub(crate) routes: Routes,
    pub(crate) client: Client,
}

impl Fake {
    pub(crate) async fn start() -> Fake {
        Self::start_with(None, StaticLogins::new()).await
    }

    /// A registry answering 401 with a Basic challenge unless a request
    /// carries `authorization`; the client signs in with `logins`.
    pub(crate) async fn start_with(authorization: Option<String>, logins: StaticLogins) -> Fake {
        let ca = TestCa::new();
        let routes: Routes = Arc::default();
        let table = Arc::clone(&routes);
        let server = TestServer::start(&ca, &[HOST], move |request: &RecordedRequest| {
            if let Some(expected) = &authorization
                && request.header("authorization") != Some(expected.as_str())
            {
                return TestResponse::status(401)
                    .with_header("www-authenticate", r#"Basic realm="fake""#);
            }
            let path = request.target.split('?').next().unwrap_or_default();
            let key = format!("{} {path}", request.method);
            let table = table.lock().unwrap();
            table
                .get(&key)
                .cloned()
                .unwrap_or_else(|| TestResponse::status(404))
        })
        .await
        .unwrap();
        let egress = Egress::new(
            config(&ca, &[(HOST, 443)]),
            Arc::new(MemoryStore::new()),
            Arc::new(server.resolver(&[HOST])),
        )
        .unwrap();
        let client = Client::new(egress, Arc::new(logins));
        Fake {
            server,
            routes,
            client,
        }
    }

    pub(crate) fn route(&self, key: &str, response: TestResponse) {
        self.routes.lock().unwrap().insert(key.to_owned(), response);
    }

    /// Serve `artifact` at `acme/echo:1.0` (manifest by tag and digest,
    /// every blob); its manifest, bytes and digest.
    pub(crate) fn serve(&self, artifact: &Artifact) -> (ImageManifest, Vec<u8>, Digest) {
        let warden_oci::manifest::Layout {
            manifest,
            config,
            blobs,
        } = artifact.layout();
        let json = serde_json::to_vec(&manifest).unwrap();
        self.serve_manifest(&json);
        self.route(
            &format!("GET /v2/acme/echo/blobs/{}", manifest.config.digest),
            TestResponse::ok(config),
        );
        for (descriptor, bytes) in blobs {
            self.route(
                &format!("GET /v2/acme/echo/blobs/{}", descriptor.digest),
                TestResponse::ok(bytes.to_vec()),
            );
        }
        (manifest, json.clone(), Digest::of(&json))
    }

    pub(crate) fn serve_manifest(&self, json: &[u8]) {
        let digest = Digest::of(json);
        let answer = TestResponse::ok(json.to_vec())
            .with_header("content-type", warden_oci::manifest::IMAGE_MANIFEST)
            .with_header("docker-content-digest", digest.as_str());
        self.route("GET /v2/acme/echo/manifests/1.0", answer.clone());
        self.route(&format!("GET /v2/acme/echo/manifests/{digest}"), answer);
    }

    /// How many requests reached `METHOD path`.
    pub(crate) fn count(&self, key: &str) -> usize {
        self.server
            .requests()
            .iter()
            .filter(|r| format!("{} {}", r.method, r.target.split('?').next().unwrap()) == key)
            .count()
    }
}

pub(crate) fn reference(suffix: &str) -> Reference {
    Reference::parse(&format!("oci://{HOST}/acme/echo{suffix}")).unwrap()
}

pub(crate) fn artifact() -> Artifact {
    Artifact {
        package_id: "echo".into(),
        module: Some((
            "echo.wasm".into(),
            b"\0asm\x0d\0\x01\0 a component".to_vec(),
        )),
        package_layer: b"\x1f\x8b a package layer".to_vec(),
    }
}
