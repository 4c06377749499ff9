//! Signed packages through the host API: a package a trusted signer signed
//! runs with the signer's trust (and, at first-party, may use the bundled
//! tier: a first-party request, an `[admin_configuration]`); an unsigned or
//! wrongly signed one is third-party at most, or refused where the operator
//! requires signatures.

use std::path::{Path, PathBuf};

use warden_host::signature::{self, SIGNATURE_FILE};
use warden_host::{
    EffectiveTrust, Host, HostConfig, HostError, Location, PackageSource, SignatureStatus,
    TrustedSigner,
};
use warden_tests::package::{SenderCredential, sender};

struct Key {
    public: String,
    secret: String,
}

fn key() -> Key {
    let pair = minisign::KeyPair::generate_encrypted_keypair(Some("pw".into())).unwrap();
    Key {
        public: pair.pk.to_base64(),
        secret: pair.sk.to_box(None).unwrap().into_string(),
    }
}

fn location(signers: Vec<TrustedSigner>, require_signature: bool) -> Location {
    let config = HostConfig {
        signers,
        require_signature,
        ..HostConfig::default()
    };
    let location = Host::builder(config).build().unwrap().open_location("p");
    location.install_embedded().unwrap();
    location
}

/// A package `id` in `dir`; `published`: asking for first-party trust with
/// an `[admin_configuration]`, as a vendor publishes its own.
fn package(dir: &Path, id: &str, published: bool) -> PathBuf {
    let credential = SenderCredential {
        vendor: "acme",
        handle: "acme_token",
        scopes: &[],
        audience: "api.acme.example",
    };
    let mut recipe = "[auth.acme]\nmethod = \"api_key\"\ndisplay_name = \"Acme\"\n\
                      fields = [{ handle = \"acme_token\", label = \"Token\" }]\n"
        .to_owned();
    if published {
        recipe.push_str(
            "\n[admin_configuration]\ngroup_id = \"vendor.acme\"\ndisplay_name = \"Acme\"\n\
             fields = [{ handle = \"acme_org\", label = \"Organization\" }]\n",
        );
    }
    let root = sender(dir, id, &credential, &recipe);
    if published {
        let manifest = root.join("manifest.toml");
        let text = std::fs::read_to_string(&manifest).unwrap().replace(
            "version = \"0.1.0\"\n",
            "version = \"0.1.0\"\ntrust = \"first_party_requested\"\n",
        );
        std::fs::write(&manifest, text).unwrap();
    }
    root
}

/// Sign the package in `dir` with `key`, as `warden sign` does.
fn sign(dir: &Path, key: &Key) {
    let source = PackageSource::BundledDir(dir.to_path_buf());
    let options =
        warden_manifest::ValidationOptions::reviewed().source(warden_manifest::Source::Bundled);
    let loaded = warden_host::load_package(&source, &options).unwrap();
    let text = signature::sign(
        &loaded.files,
        &loaded.package.id,
        &key.secret,
        Some("pw".into()),
    )
    .unwrap();
    std::fs::write(dir.join(SIGNATURE_FILE), text).unwrap();
}

#[test]
fn a_package_a_trusted_signer_signed_runs_with_the_signers_trust() {
    let scratch = tempfile::tempdir().unwrap();
    let acme = key();
    let signer = TrustedSigner::new("acme", &acme.public, EffectiveTrust::FirstParty).unwrap();
    let location = location(vec![signer], false);

    // Unsigned, the vendor's own package asks for what only the deployment's
    // packages may.
    let published = package(&scratch.path().join("unsigned"), "acme", true);
    let refused = location
        .install(&PackageSource::Dir(published))
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("only allowed in a bundled package"),
        "{refused}"
    );

    let published = package(&scratch.path().join("signed"), "acme", true);
    sign(&published, &acme);
    location.install(&PackageSource::Dir(published)).unwrap();
    let installed = location.package("acme").unwrap();
    assert_eq!(installed.trust, EffectiveTrust::FirstParty);
    assert!(matches!(
        &installed.signature,
        SignatureStatus::Signed { signer, .. } if signer == "acme"
    ));

    // Signed by a key nobody trusts: an ordinary third-party package.
    let plain = package(&scratch.path().join("stranger"), "plain", false);
    sign(&plain, &key());
    location.install(&PackageSource::Dir(plain)).unwrap();
    let installed = location.package("plain").unwrap();
    assert_eq!(installed.trust, EffectiveTrust::ThirdParty);
    assert!(matches!(
        installed.signature,
        SignatureStatus::UnknownKey { .. }
    ));
}

#[test]
fn where_signatures_are_required_only_a_trusted_signers_packages_install() {
    let scratch = tempfile::tempdir().unwrap();
    let acme = key();
    let signer = TrustedSigner::new("acme", &acme.public, EffectiveTrust::ThirdParty).unwrap();
    // The built-in packages are the deployment's: they need no signature.
    let location = location(vec![signer], true);

    let refused = |dir: PathBuf| match location.install(&PackageSource::Dir(dir)) {
        Err(HostError::SignatureRequired { found, .. }) => found,
        other => panic!("refused for its signature: {other:?}"),
    };
    let unsigned = package(&scratch.path().join("a"), "acme", false);
    assert_eq!(refused(unsigned), "unsigned");
    let stranger = package(&scratch.path().join("b"), "acme", false);
    sign(&stranger, &key());
    assert!(refused(stranger).contains("which no trusted signer has"));
    // A trusted signer's signature over other content (another package's).
    let other = package(&scratch.path().join("c"), "other", false);
    sign(&other, &acme);
    let moved = package(&scratch.path().join("d"), "acme", false);
    std::fs::copy(other.join(SIGNATURE_FILE), moved.join(SIGNATURE_FILE)).unwrap();
    assert!(refused(moved).contains("did not sign this content"));
    assert!(location.package("acme").is_none());

    let signed = package(&scratch.path().join("e"), "acme", false);
    sign(&signed, &acme);
    location.install(&PackageSource::Dir(signed)).unwrap();
    // A signer trusted as third-party vouches for nothing more.
    assert_eq!(
        location.package("acme").unwrap().trust,
        EffectiveTrust::ThirdParty
    );
}
