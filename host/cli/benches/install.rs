//! Installing a package from a local OCI registry (the CNCF Distribution
//! registry, `docker-registry`, on loopback with TLS) against installing
//! the same package from its `.tar.gz` archive, same run, through the host
//! library: read (pull: resolve the tag, fetch both layers, check every
//! digest), verify, validate, and install with a warm compile cache (so
//! neither side compiles: what differs is where the bytes come from).

use std::sync::{Arc, OnceLock};

use warden_host::oci::{Reference, StaticLogins};
use warden_host::{Host, HostConfig, Location, PackageSource, Replace};
use warden_tests::oci_registry::{REGISTRY_HOST, TestRegistry};
use warden_tests::package::repo_root;

fn main() {
    world();
    divan::main();
}

struct World {
    rt: tokio::runtime::Runtime,
    host: Host,
    location: Location,
    reference: Reference,
    archive: std::path::PathBuf,
    _registry: TestRegistry,
    _data: tempfile::TempDir,
}

static WORLD: OnceLock<World> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let registry = rt.block_on(TestRegistry::start());
        let egress = warden_egress::testing::config(registry.ca(), &[(REGISTRY_HOST, 443)]);
        let resolver = warden_egress::resolve::OverrideResolver::new()
            .with_socket(REGISTRY_HOST, [registry.addr()]);
        // A data directory: its compile cache is filled by the first install.
        let data = tempfile::tempdir().unwrap();
        let host = Host::builder(HostConfig {
            egress,
            data_dir: Some(data.path().to_owned()),
            ..HostConfig::default()
        })
        .resolver(Arc::new(resolver))
        .build()
        .unwrap();
        let location = host.open_location("bench");
        let archive = repo_root().join("target/packages/echo.tar.gz");
        assert!(archive.is_file(), "run `cargo xtask bundle` first");
        let loaded = location
            .load_package(&PackageSource::Archive(archive.clone()))
            .unwrap();
        let reference: Reference = registry.reference("bench/echo:1.0").parse().unwrap();
        let client = host.registry(Arc::new(StaticLogins::new()));
        rt.block_on(client.push(&reference, &loaded.artifact().unwrap()))
            .unwrap();
        // Warm the compile cache: both installs compile nothing after this.
        location.install_loaded(loaded, Replace::Yes).unwrap();
        World {
            rt,
            host,
            location,
            reference,
            archive,
            _registry: registry,
            _data: data,
        }
    })
}

#[divan::bench]
fn from_archive() {
    let world = world();
    let loaded = world
        .location
        .load_package(&PackageSource::Archive(world.archive.clone()))
        .unwrap();
    world.location.install_loaded(loaded, Replace::Yes).unwrap();
}

#[divan::bench]
fn from_registry() {
    let world = world();
    let client = world.host.registry(Arc::new(StaticLogins::new()));
    let source = world
        .rt
        .block_on(warden_host::pull(&client, &world.reference))
        .unwrap();
    let loaded = world.location.load_package(&source).unwrap();
    world.location.install_loaded(loaded, Replace::Yes).unwrap();
}
