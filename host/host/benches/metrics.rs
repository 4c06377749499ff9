//! What counting costs a call: the same calls on a host built with metrics
//! and on one without, same run.
//!
//! - `echo`: the bundled `echo.echo` component (the WASM lane, no network):
//!   the cheapest whole call, where a fixed cost shows most.
//! - `weather`: a first-party tool whose request goes through egress to a
//!   local HTTPS provider that reflects the key (injection, an egress
//!   request counted by target, a redaction counted).
//!
//! `cargo bench -p warden-host --bench metrics` (after `cargo xtask bundle`).

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use warden_core::net::{BoxFuture, GuestRequest};
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{TestCa, TestResponse, TestServer};
use warden_host::{
    FirstPartyCall, FirstPartyError, FirstPartyService, Host, HostConfig, Invocation,
    InvokeOutcome, Location, Metrics, Origin, PackageSource,
};

fn main() {
    world();
    divan::main();
}

struct World {
    rt: tokio::runtime::Runtime,
    /// Without metrics, then with.
    hosts: [Location; 2],
    _provider: TestServer,
}

static WORLD: OnceLock<World> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(setup)
}

fn setup() -> World {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ca = TestCa::new();
    let provider = rt.block_on(async {
        TestServer::start(&ca, &["api.weather.example"], |request| {
            let key = request.header("x-api-key").unwrap_or("none").to_owned();
            TestResponse::json(&json!({ "temp": 21.5, "conditions": format!("sunny; {key}") }))
        })
        .await
        .unwrap()
    });
    let location = |metrics: bool| {
        let _entered = rt.enter();
        let config = HostConfig {
            egress: warden_egress::testing::config(&ca, &[("api.weather.example", 443)]),
            ..HostConfig::default()
        };
        let mut builder = Host::builder(config)
            .secret_store(Arc::new(secrets()))
            .resolver(Arc::new(provider.resolver(&["api.weather.example"])))
            .first_party_service("weather", Arc::new(Weather));
        if metrics {
            builder = builder.metrics(Arc::new(Metrics::new()));
        }
        let host = builder.build().unwrap();
        let location = host.open_location("bench");
        location.install_embedded().unwrap();
        let weather =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packages/weather");
        location
            .install(&PackageSource::BundledDir(weather))
            .unwrap();
        location
    };
    let hosts = [location(false), location(true)];
    let world = World {
        rt,
        hosts,
        _provider: provider,
    };
    // Compile and warm both before the first sample.
    for location in &world.hosts {
        world.rt.block_on(call(location, echo()));
        world.rt.block_on(call(location, weather()));
    }
    world
}

/// The provider's key, bound to the weather extension and its API.
fn secrets() -> MemoryStore {
    let api = AccountAudience {
        scheme: "https".into(),
        host: "api.weather.example".into(),
        port: 443,
    };
    MemoryStore::new().with(
        AccountKey::new("weather", "weather_api_key", Vec::<String>::new()),
        AccountBinding::new("weather", [api]),
        "wk_benchKey0123456789abcdef",
    )
}

#[derive(Debug)]
struct Weather;

impl FirstPartyService for Weather {
    fn call(
        &self,
        call: FirstPartyCall,
        input: Value,
    ) -> BoxFuture<'_, Result<Value, FirstPartyError>> {
        Box::pin(async move {
            let city = input["city"].as_str().unwrap_or_default().to_owned();
            let request = GuestRequest {
                method: "GET".into(),
                url: format!("https://api.weather.example/v1/current?city={city}"),
                headers: Vec::new(),
                body: None,
                timeout: None,
            };
            let response = call.http.send_with(request, "weather_api_key").await?;
            let body: Value = serde_json::from_slice(&response.body).unwrap_or_default();
            Ok(
                json!({ "city": city, "temperature_c": body["temp"], "conditions": body["conditions"] }),
            )
        })
    }
}

fn echo() -> Invocation {
    Invocation::new("echo_echo", json!({ "text": "hello" }), Origin::Product)
}

fn weather() -> Invocation {
    Invocation::new(
        "weather_current",
        json!({ "city": "Paris" }),
        Origin::Product,
    )
}

async fn call(location: &Location, invocation: Invocation) {
    match location.invoke(invocation).await.unwrap() {
        InvokeOutcome::Completed(_) => {}
        other => panic!("the call runs: {other:?}"),
    }
}

const METRICS: [&str; 2] = ["off", "on"];

fn host(metrics: &str) -> &'static Location {
    &world().hosts[usize::from(metrics == "on")]
}

#[divan::bench(args = METRICS, sample_count = 1000)]
fn echo_call(bencher: divan::Bencher<'_, '_>, metrics: &str) {
    let location = host(metrics);
    bencher.bench(|| world().rt.block_on(call(location, echo())));
}

#[divan::bench(args = METRICS, sample_count = 1000)]
fn weather_call(bencher: divan::Bencher<'_, '_>, metrics: &str) {
    let location = host(metrics);
    bencher.bench(|| world().rt.block_on(call(location, weather())));
}
