//! `--clusters DIR` on a fleet of emulated clusters: members are engaged as their kubeconfig
//! files appear and released as they go, each watched through a client of its own and shown on
//! `/metrics`; a kubeconfig asking to run a program is refused by name and the others are
//! engaged all the same; a Spread naming a cluster nobody engaged is refused, and nothing is
//! written in any cluster (a Spread's children in engaged members: `member_children`; an
//! engaged member the policy does not grant its plugin: `hostile::members`).

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, PostParams};
use serde_json::json;
use weir::clusters::PARENT_UID_LABEL;
use weir_e2e::fleet::Members;
use weir_e2e::weir_dev::WeirDev;
use weir_e2e::weir_run::{ops_get, sample};
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};

/// A member kubeconfig whose user runs a program for its credentials.
const EXEC: &str = "apiVersion: v1
kind: Config
current-context: evil
contexts: [{name: evil, context: {cluster: evil, user: evil}}]
clusters: [{name: evil, cluster: {server: 'https://127.0.0.1:1'}}]
users: [{name: evil, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/false}}}]
";

fn deployment(name: &str, parent_uid: &str) -> anyhow::Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {(PARENT_UID_LABEL): parent_uid, "app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "nginx"}]}},
        },
    }))?)
}

/// The `Reconciled` condition's message once the parent is refused.
pub async fn refusal(env: &TestEnv, name: &str) -> anyhow::Result<String> {
    let parents = env.api(&kinds::spread());
    eventually(&format!("{name} is refused"), CONVERGE, || async {
        let c = condition(&parents.get(name).await.ok()?, "Reconciled")?;
        (c["status"] == "False" && c["reason"] == "Refused")
            .then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await
}

#[tokio::test]
async fn member_clusters_are_engaged_and_released_as_their_kubeconfig_files_come_and_go()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&["member-a", "member-b"], &env.namespace).await?;
    std::fs::write(members.dir().join("evil.yaml"), EXEC)?;
    let host = members.serve_spread(&env, &["*"]).await?;
    let engaged = members.engaged_by(&host, &[]).await?;
    let Some(ops) = host.addr() else {
        anyhow::bail!("the host serves no /metrics");
    };
    let metrics = ops_get(ops, "/metrics").await?;
    assert_eq!(
        sample(&metrics, "weir_clusters_engaged"),
        Some(2.0),
        "{metrics}"
    );
    assert_eq!(
        sample(&metrics, "weir_cluster_kubeconfigs_refused"),
        Some(1.0),
        "the exec kubeconfig is refused, once: {metrics}"
    );

    // What a member holds is cached through its own watch: a Deployment marked as a child.
    let in_a: Api<Deployment> = Api::namespaced(members.client("member-a")?, &env.namespace);
    in_a.create(&PostParams::default(), &deployment("marked", "uid-1")?)
        .await?;
    let series = r#"weir_cluster_cached_objects{cluster="member-a"}"#;
    eventually("member-a's Deployment is cached", CONVERGE, || async {
        let text = ops_get(ops, "/metrics").await.ok()?;
        (sample(&text, series) == Some(1.0)).then_some(())
    })
    .await?;

    // A Spread naming a cluster nobody engaged is refused as unknown. Nothing is written in
    // any cluster.
    env.create(
        &kinds::spread(),
        "far",
        json!({"image": "nginx", "clusters": ["member-z"]}),
    )
    .await?;
    let message = refusal(&env, "far").await?;
    assert!(message.contains("has not engaged"), "{message}");
    let in_b: Api<Deployment> = Api::namespaced(members.client("member-b")?, &env.namespace);
    assert!(
        in_b.get_opt("far").await?.is_none(),
        "nothing is written in member-b"
    );
    assert!(
        in_a.get_opt("far").await?.is_none(),
        "nothing is written in member-a"
    );
    assert!(
        env.typed::<Deployment>().get_opt("far").await?.is_none(),
        "nothing is written in the hub instead"
    );

    // member-b's file goes: released, its watches stop, its series leave /metrics.
    std::fs::remove_file(members.kubeconfig("member-b"))?;
    eventually("member-b is released", CONVERGE, || async {
        (engaged.names() == ["member-a"]).then_some(())
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let member_b = members.member("member-b")?;
    let mut cursor = member_b.request_cursor();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = member_b.requests_since(&mut cursor);
    assert!(
        after.is_empty(),
        "a released member is not asked anything: {after:?}"
    );
    let metrics = ops_get(ops, "/metrics").await?;
    assert_eq!(
        sample(&metrics, "weir_clusters_engaged"),
        Some(1.0),
        "{metrics}"
    );
    assert!(!metrics.contains(r#"cluster="member-b""#), "{metrics}");

    // Its file back: engaged again.
    member_b.write_kubeconfig(&members.kubeconfig("member-b"))?;
    eventually("member-b is engaged again", CONVERGE, || async {
        (engaged.names() == ["member-a", "member-b"]).then_some(())
    })
    .await?;
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn weir_dev_runs_member_clusters_and_lists_them_in_its_view() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut dev = WeirDev::start_with(dir.path(), "spread.wasm", None, &["--clusters", "2"])?;
    let own = dev.printed("cluster local (the host's own) at").await?;
    let hub = own.rsplit(' ').next().unwrap_or_default().to_owned();
    assert!(hub.starts_with("http://127.0.0.1:"), "{own}");
    for member in ["member-1", "member-2"] {
        let line = dev.printed(&format!("cluster {member} engaged at")).await?;
        let kubeconfig = dir.path().join("clusters").join(format!("{member}.yaml"));
        let limits = weir::client::ClientLimits::default();
        let client = weir::client::connect(Some(&kubeconfig), limits, None).await?;
        client.apiserver_version().await?;
        let server = kube::config::Kubeconfig::read_from(&kubeconfig)?.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.clone())
            .unwrap_or_default();
        assert!(
            line.contains(&format!("{server}/")),
            "{line} names {server}"
        );
        assert_ne!(server, hub, "{member} is a server of its own");
    }
    dev.check_running()
}
