//! A real OCI registry for the distribution tests: Debian's `docker-registry`
//! (the CNCF Distribution registry, which `cargo xtask test` installs when
//! it is missing) on loopback with TLS from the test CA, its storage in a
//! temporary directory; optionally behind the distribution token flow, with
//! a token service ([`TokenService`]) that signs ES256 tokens the registry
//! checks against the service's certificate. Killed (and its files removed)
//! when dropped. As root it runs as `nobody`.
//!
//! Warden reaches it by a real-looking name, [`REGISTRY_HOST`], through the
//! resolver override; `skopeo` by `127.0.0.1:PORT`, which its certificate
//! also names, trusting the CA from [`TestRegistry::cert_dir`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING as ALG, EcdsaKeyPair};
use serde_json::json;
use warden_egress::testing::{RecordedRequest, TestCa, TestResponse, TestServer};

use crate::Warden;
use crate::postgres::{chown, free_port, is_root};

/// The registry's name in references (`oci://registry.warden.example/…`).
pub const REGISTRY_HOST: &str = "registry.warden.example";
/// The token service's name.
pub const AUTH_HOST: &str = "auth.warden.example";
/// The registry's `service` (the tokens' audience).
const SERVICE: &str = "registry.warden.example";
/// The tokens' issuer.
const ISSUER: &str = "warden-test-token-service";
/// The unprivileged user the registry runs as when the tests run as root.
const RUN_AS: &str = "nobody";

/// A running registry.
#[derive(Debug)]
pub struct TestRegistry {
    child: Child,
    root: tempfile::TempDir,
    port: u16,
    ca: TestCa,
    token: Option<TokenService>,
}

/// The user and password the token service accepts.
#[derive(Debug, Clone)]
pub struct Login {
    /// The user.
    pub username: String,
    /// The password.
    pub password: String,
}

impl TestRegistry {
    /// An anonymous registry (anyone pushes and pulls).
    pub async fn start() -> TestRegistry {
        Self::start_with(None).await
    }

    /// A registry behind the token flow: `login` may pull and push;
    /// without a login the service gives pull-only tokens.
    pub async fn with_token_auth(login: Login) -> TestRegistry {
        Self::start_with(Some(login)).await
    }

    async fn start_with(login: Option<Login>) -> TestRegistry {
        let binary = binary();
        let ca = TestCa::new();
        let root = tempfile::Builder::new()
            .prefix("warden-registry-")
            .tempdir()
            .expect("temp dir");
        let (cert, key) = crate::tls::server_pem(&ca, &[REGISTRY_HOST, "127.0.0.1"]);
        std::fs::write(root.path().join("cert.pem"), cert).expect("cert");
        std::fs::write(root.path().join("key.pem"), key).expect("key");
        std::fs::create_dir(root.path().join("data")).expect("data dir");
        let certs = root.path().join("certs");
        std::fs::create_dir(&certs).expect("cert dir");
        std::fs::write(certs.join("ca.crt"), ca.cert_pem()).expect("ca.crt");
        let token = match login {
            Some(login) => Some(TokenService::start(&ca, login).await),
            None => None,
        };
        let port = free_port();
        let config = root.path().join("config.yml");
        std::fs::write(&config, configuration(root.path(), port, token.as_ref())).expect("config");
        let as_root = is_root();
        if as_root {
            chown_tree(root.path(), RUN_AS);
        }
        let mut command = if as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", RUN_AS, "--"]).arg(&binary);
            c
        } else {
            Command::new(&binary)
        };
        let log = std::fs::File::create(root.path().join("registry.log")).expect("log");
        let child = command
            .arg("serve")
            .arg(&config)
            .current_dir(root.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
        let registry = TestRegistry {
            child,
            root,
            port,
            ca,
            token,
        };
        registry.wait_ready();
        registry
    }

    /// `oci://registry.warden.example/<repository_and_tag>`.
    pub fn reference(&self, repository_and_tag: &str) -> String {
        format!("oci://{REGISTRY_HOST}/{repository_and_tag}")
    }

    /// `docker://127.0.0.1:PORT/<repository_and_tag>`, for skopeo.
    pub fn docker_reference(&self, repository_and_tag: &str) -> String {
        format!("docker://127.0.0.1:{}/{repository_and_tag}", self.port)
    }

    /// The CA the registry's certificate comes from.
    pub fn ca(&self) -> &TestCa {
        &self.ca
    }

    /// The loopback address the registry listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// A directory with the CA as `ca.crt` (skopeo's `--cert-dir`).
    pub fn cert_dir(&self) -> PathBuf {
        self.root.path().join("certs")
    }

    /// The token service, when the registry has one.
    pub fn token_service(&self) -> Option<&TokenService> {
        self.token.as_ref()
    }

    /// The registry's configuration for `warden`: trust the CA, resolve
    /// the registry (and token service) to loopback and allow exactly
    /// those origins to be private addresses. Appended to `extra`.
    pub fn warden_config(&self, warden: &Warden) -> String {
        let ca = warden.data_dir().join("registry-ca.pem");
        std::fs::write(&ca, self.ca.cert_pem()).expect("write CA");
        let mut allow = vec![format!("\"{REGISTRY_HOST}:443\"")];
        let mut resolve = format!("\"{REGISTRY_HOST}\" = [\"127.0.0.1:{}\"]\n", self.port);
        if let Some(token) = &self.token {
            allow.push(format!("\"{AUTH_HOST}:443\""));
            resolve.push_str(&format!(
                "\"{AUTH_HOST}\" = [\"{}\"]\n",
                token.server.addr()
            ));
        }
        format!(
            "[egress]\nextra_roots = [{ca:?}]\nallow_private = [{}]\n\n[resolve]\n{resolve}",
            allow.join(", ")
        )
    }

    /// Point `warden` at the registry ([`TestRegistry::warden_config`]).
    pub fn configure(&self, warden: &Warden) {
        warden.configure(&self.warden_config(warden));
    }

    /// Run `skopeo` with `args` (trusting the CA; `--creds` added by the
    /// caller); panics with its output when it fails.
    pub fn skopeo(&self, args: &[&str]) -> String {
        let output = Command::new("skopeo")
            .args(args)
            .output()
            .expect("skopeo is installed (cargo xtask test installs Debian's `skopeo`)");
        assert!(
            output.status.success(),
            "skopeo {args:?}: {}{}\nregistry log:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
        String::from_utf8(output.stdout).expect("skopeo prints UTF-8")
    }

    /// What the registry logged.
    pub fn log(&self) -> String {
        let text =
            std::fs::read_to_string(self.root.path().join("registry.log")).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the registry did not listen:\n{}", self.log());
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> PathBuf {
    std::env::var_os("WARDEN_REGISTRY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("docker-registry"))
}

fn chown_tree(dir: &Path, user: &str) {
    chown(dir, user);
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            chown_tree(&path, user);
        } else {
            chown(&path, user);
        }
    }
}

fn configuration(root: &Path, port: u16, token: Option<&TokenService>) -> String {
    let root = root.display();
    let mut config = format!(
        "version: 0.1\n\
         log:\n  level: info\n  accesslog:\n    disabled: false\n\
         storage:\n  filesystem:\n    rootdirectory: {root}/data\n  delete:\n    enabled: true\n\
         http:\n  addr: 127.0.0.1:{port}\n  secret: warden-test-secret\n  tls:\n    certificate: {root}/cert.pem\n    key: {root}/key.pem\n"
    );
    if let Some(token) = token {
        let bundle = format!("{root}/token-signer.pem");
        std::fs::write(&bundle, &token.cert_pem).expect("token signer cert");
        config.push_str(&format!(
            "auth:\n  token:\n    realm: https://{AUTH_HOST}/token\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {bundle}\n"
        ));
    }
    config
}

/// The registry's token service: `GET /token?service=…&scope=…`, with the
/// login as HTTP Basic for push; anonymous requests get pull access only.
#[derive(Debug)]
pub struct TokenService {
    server: TestServer,
    cert_pem: String,
}

struct Signer {
    key: EcdsaKeyPair,
    cert_der: Vec<u8>,
    login: Login,
}

impl TokenService {
    async fn start(ca: &TestCa, login: Login) -> TokenService {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let cert = rcgen::CertificateParams::new(vec!["token-signer".into()])
            .expect("params")
            .self_signed(&key)
            .expect("self-signed");
        let rng = ring::rand::SystemRandom::new();
        let signer = Arc::new(Signer {
            key: EcdsaKeyPair::from_pkcs8(&ALG, &key.serialize_der(), &rng).expect("ring key"),
            cert_der: cert.der().to_vec(),
            login,
        });
        let server = TestServer::start(ca, &[AUTH_HOST], move |request| signer.answer(request))
            .await
            .expect("token service starts");
        TokenService {
            server,
            cert_pem: cert.pem(),
        }
    }

    /// Every request the service received.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }
}

impl Signer {
    fn answer(&self, request: &RecordedRequest) -> TestResponse {
        let query = request.target.split_once('?').map_or("", |(_, q)| q);
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let signed_in = match request.header("authorization") {
            None => false,
            Some(value) => {
                let expected =
                    STANDARD.encode(format!("{}:{}", self.login.username, self.login.password));
                if value != format!("Basic {expected}") {
                    return TestResponse::status(401)
                        .with_body(r#"{"details":"incorrect username or password"}"#);
                }
                true
            }
        };
        let access: Vec<serde_json::Value> = pairs
            .iter()
            .filter(|(k, _)| k == "scope")
            .filter_map(|(_, scope)| {
                let mut parts = scope.splitn(3, ':');
                let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                let actions: Vec<&str> = actions
                    .split(',')
                    .filter(|a| signed_in || *a == "pull")
                    .collect();
                Some(json!({"type": kind, "name": name, "actions": actions}))
            })
            .collect();
        let subject = if signed_in {
            self.login.username.as_str()
        } else {
            ""
        };
        TestResponse::json(&json!({ "token": self.token(subject, access) }))
    }

    fn token(&self, subject: &str, access: Vec<serde_json::Value>) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs() as i64;
        let header =
            json!({"typ": "JWT", "alg": "ES256", "x5c": [STANDARD.encode(&self.cert_der)]});
        let claims = json!({
            "iss": ISSUER, "sub": subject, "aud": SERVICE,
            "exp": now + 300, "nbf": now - 10, "iat": now,
            "jti": format!("{now}-{}", access.len()), "access": access,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = ring::rand::SystemRandom::new();
        let signature = self.key.sign(&rng, signing_input.as_bytes()).expect("sign");
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )
    }
}
