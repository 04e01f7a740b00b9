//! `--dump-failures` on refused reconciles: each is dumped with the parent, children and related
//! objects the plugin was given and the answer it gave, without asking the plugin again, and the
//! file fails under `weir test` with the refusal the parent's condition shows. One refusal is
//! the scenario plugin's (a child in another namespace); the other exists only because of a
//! related object (a Mirror copying a source ConfigMap value too large for a child).

use std::ffi::OsStr;

use anyhow::{Context, Result};
use kube::api::{DynamicObject, PostParams};
use serde_json::json;
use weir::offline::{Failure, Fixture, parse, run_dir};
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin};

/// The sum of `metric`'s samples for `plugin` in the host's `/metrics` text.
fn metric(host: &weir::Manager, metric: &str, plugin: &str) -> u64 {
    let (prefix, label) = (format!("{metric}{{"), format!("plugin=\"{plugin}\""));
    host.metrics()
        .encode()
        .lines()
        .filter(|l| l.starts_with(&prefix) && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The `Reconciled` condition's message once the host has refused `name`.
async fn refusal(env: &TestEnv, kind: &weir::plugin::ResourceKind, name: &str) -> Result<String> {
    let parents = env.api(kind);
    eventually(&format!("{name} is refused"), CONVERGE, || async {
        let c = condition(&parents.get(name).await.ok()?, "Reconciled")?;
        (c["status"] == "False" && c["reason"] == "Refused")
            .then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await
}

/// The dumped fixture `file`, once it is there.
async fn dumped(dir: &std::path::Path, file: &str) -> Result<Fixture> {
    let path = dir.join(file);
    let text = eventually(&format!("{file} is dumped"), CONVERGE, || async {
        std::fs::read_to_string(&path).ok()
    })
    .await?;
    parse(&text).with_context(|| format!("{file} is a fixture"))
}

#[tokio::test]
async fn a_refused_reconcile_is_dumped_without_asking_the_plugin_again_and_fails_the_same_way()
-> Result<()> {
    let env = TestEnv::start().await?;
    let (scenario, related) = (plugin("scenario")?, plugin("related")?);
    env.install_crd(&scenario).await?;
    env.install_crd(&related).await?;
    let dumps = tempfile::tempdir()?;
    let host = env
        .run_args(RunSource::Loaded(vec![scenario.clone(), related.clone()]))
        .flags([OsStr::new("--dump-failures"), dumps.path().as_os_str()])
        .in_process(&env)
        .start()
        .await?;

    // A source value of 1.1 MiB: its copy is larger than a child may be, so the Mirror's answer
    // is refused only because of what the related object holds.
    let big = "x".repeat(1_100_000);
    let source: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "src", "namespace": env.namespace},
        "data": {"k": big},
    }))?;
    env.api(&kinds::config_map())
        .create(&PostParams::default(), &source)
        .await?;
    env.create(&kinds::mirror(), "m", json!({"source": "src", "key": "k"}))
        .await?;
    let other = format!("{}-other", env.namespace);
    env.create(
        &kinds::scenario(),
        "elsewhere",
        json!({"configMaps": ["a"], "namespace": other}),
    )
    .await?;

    let too_large = refusal(&env, &kinds::mirror(), "m").await?;
    assert!(
        too_large.contains("m-copy") && too_large.contains("exceeds the limit"),
        "{too_large}"
    );
    let elsewhere = refusal(&env, &kinds::scenario(), "elsewhere").await?;
    assert!(elsewhere.contains(&other), "{elsewhere}");

    let ns = &env.namespace;
    let mirror = dumped(dumps.path(), &format!("related-{ns}_m.yaml")).await?;
    assert_eq!(
        mirror.related.len(),
        1,
        "the source the Mirror read is in the dump"
    );
    assert_eq!(mirror.related[0]["data"]["k"], big.as_str());
    let answer = mirror
        .expect
        .children
        .context("the refused answer is the expectation")?;
    assert_eq!(answer.len(), 1);
    assert_eq!(
        answer[0]["data"]["value"],
        big.as_str(),
        "the answer as the plugin gave it"
    );
    assert!(
        answer[0]["metadata"].get("ownerReferences").is_none(),
        "unstamped"
    );
    let scenario_dump = dumped(dumps.path(), &format!("scenario-{ns}_elsewhere.yaml")).await?;
    assert!(scenario_dump.related.is_empty());

    // Replayed offline, each fails with the refusal the cluster showed.
    for (plugin, file, condition) in [
        (&related, format!("related-{ns}_m.yaml"), &too_large),
        (
            &scenario,
            format!("scenario-{ns}_elsewhere.yaml"),
            &elsewhere,
        ),
    ] {
        let one = tempfile::tempdir()?;
        std::fs::copy(dumps.path().join(&file), one.path().join(&file))?;
        let summary = run_dir(plugin, one.path())?;
        assert_eq!(
            summary.cases[0].failures,
            [Failure::Refused(condition.clone())],
            "{file}"
        );
    }

    // Asked once per reconcile: `select` and `reconcile` for the Mirror, `reconcile` for the
    // scenario; the dump asked nothing more.
    let counts = || {
        ["related", "scenario"].map(|p| {
            let calls = metric(&host, "weir_plugin_call_duration_seconds_count", p);
            (calls, metric(&host, "weir_reconciles_total", p))
        })
    };
    let [(mirror_calls, mirrors), (scenario_calls, scenarios)] =
        eventually("the call counts settle", CONVERGE, || async {
            let before = counts();
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            (counts() == before).then_some(before)
        })
        .await?;
    assert!(mirrors >= 1 && scenarios >= 1, "{mirrors} {scenarios}");
    assert_eq!(mirror_calls, 2 * mirrors, "select and reconcile, once each");
    assert_eq!(scenario_calls, scenarios, "reconcile, once");
    host.shutdown().await;
    Ok(())
}
