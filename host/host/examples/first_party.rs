//! A first-party tool: native code an embedding registers for a
//! `[runtime] kind = "first_party"` package (`examples/packages/weather`).
//!
//! The tool never holds the API key and has no HTTP client of its own: it
//! names the credential handle and sends through `call.http`, the call's
//! egress session, which applies the capability's network policy, injects
//! the key for `api.weather.example` only, and redacts it from responses.
//!
//! Run with `cargo run -p warden-host --example first_party`. A local HTTPS
//! server with a generated CA plays the weather API; a resolver override
//! keeps the manifest's real host name.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_core::net::{BoxFuture, GuestRequest};
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{TestCa, TestResponse, TestServer};
use warden_host::{
    FirstPartyCall, FirstPartyError, FirstPartyService, Host, HostConfig, Invocation,
    InvokeOutcome, Origin, PackageSource,
};

/// The native implementation of service `weather`.
#[derive(Debug)]
struct Weather;

impl FirstPartyService for Weather {
    fn call(
        &self,
        call: FirstPartyCall,
        input: Value,
    ) -> BoxFuture<'_, Result<Value, FirstPartyError>> {
        Box::pin(async move {
            // `input` was checked against the input schema already.
            let city = input["city"].as_str().unwrap_or_default().to_owned();
            let request = GuestRequest {
                method: "GET".into(),
                url: format!("https://api.weather.example/v1/current?city={city}"),
                headers: vec![("accept".into(), "application/json".into())],
                body: None,
                timeout: None,
            };
            // Egress injects `x-api-key` for this handle; we never see it.
            let response = call.http.send_with(request, "weather_api_key").await?;
            let body: Value =
                serde_json::from_slice(&response.body).map_err(|_| FirstPartyError::Failed {
                    message: format!("the weather API answered {}", response.status),
                })?;
            Ok(json!({
                "city": city,
                "temperature_c": body["temp"],
                "conditions": body["conditions"],
            }))
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The weather API, played by a local HTTPS server.
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &["api.weather.example"], |request| {
        let keyed = request.header("x-api-key").is_some();
        TestResponse::json(
            &json!({ "temp": 21.5, "conditions": if keyed { "sunny" } else { "no key" } }),
        )
    })
    .await?;

    // The user's API key, bound to the weather extension and its API.
    let audience = AccountAudience {
        scheme: "https".into(),
        host: "api.weather.example".into(),
        port: 443,
    };
    let secrets = MemoryStore::new().with(
        AccountKey::new("weather", "weather_api_key", Vec::<String>::new()),
        AccountBinding::new("weather", [audience]),
        "wk_example_key",
    );

    let config = HostConfig {
        egress: warden_egress::testing::config(&ca, &[("api.weather.example", 443)]),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(server.resolver(&["api.weather.example"])))
        .first_party_service("weather", Arc::new(Weather))
        .build()?;
    let location = host.open_location("example");
    let package =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/packages/weather");
    location.install(&PackageSource::BundledDir(package))?;

    let call = Invocation::new(
        "weather_current",
        json!({ "city": "Paris" }),
        Origin::Product,
    );
    match location.invoke(call).await? {
        InvokeOutcome::Completed(done) => println!("{}", done.text),
        InvokeOutcome::NeedsApproval(request) => println!("needs approval: {}", request.id),
        InvokeOutcome::Failed(failure) => println!("failed: {failure}"),
    }
    let sent = server.requests();
    println!(
        "the API received {} request(s), key injected: {}",
        sent.len(),
        sent.iter()
            .all(|r| r.header("x-api-key") == Some("wk_example_key"))
    );
    Ok(())
}
