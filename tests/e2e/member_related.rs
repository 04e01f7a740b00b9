//! A related object read in a member cluster (contract 0.4.0): a Mirror in the hub selects a
//! ConfigMap in member-a, which the policy grants its plugin; its child in the hub copies that
//! ConfigMap (not the hub's of the same name), and an edit in member-a re-reconciles the Mirror
//! at once (no requeue timer: the plugin answers `done`). A selection in a member the policy
//! does not grant is refused naming what is granted; one in a granted member the host has not
//! engaged is refused for that pass, saying so.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir_e2e::fleet::Members;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};

fn theme(css: &str) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": "theme"},
        "data": {"css": css},
    }))?)
}

/// The `Reconciled` condition of Mirror `name` once the host has refused its selection.
async fn refused(env: &TestEnv, name: &str) -> anyhow::Result<Value> {
    let mirrors = env.api(&kinds::mirror());
    eventually(
        &format!("{name}'s selection is refused"),
        CONVERGE,
        || async {
            let m = mirrors.get(name).await.ok()?;
            let c = condition(&m, "Reconciled")?;
            (c["reason"] == "Refused").then_some(c)
        },
    )
    .await
}

#[tokio::test]
async fn a_mirror_reads_its_source_in_a_granted_member_and_hears_its_edits() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&["member-a", "member-b"], &env.namespace).await?;
    // member-z is granted but never engaged.
    let host = members
        .serve(&env, "related", &["member-a", "member-z"])
        .await?;
    members.engaged_by(&host, &[]).await?;
    let pp = PostParams::default();
    let in_a: Api<ConfigMap> = Api::namespaced(members.client("member-a")?, &env.namespace);
    in_a.create(&pp, &theme("a{}")?).await?;
    env.typed::<ConfigMap>()
        .create(&pp, &theme("hub{}")?)
        .await?;

    // Read in member-a, not in the hub: the child copies member-a's.
    let spec = |cluster: &str| json!({"source": "theme", "key": "css", "sourceCluster": cluster});
    env.create(&kinds::mirror(), "m", spec("member-a")).await?;
    let copies = env.typed::<ConfigMap>();
    let copied = |want: &'static str| {
        let copies = copies.clone();
        async move {
            eventually(&format!("m-copy holds {want:?}"), CONVERGE, || async {
                let copy = copies.get_opt("m-copy").await.ok()??;
                (copy.data?.get("value")? == want).then_some(())
            })
            .await
        }
    };
    copied("a{}").await?;

    // Edited in member-a: the member's watch wakes the Mirror through the related index.
    let edit = Patch::Merge(json!({"data": {"css": "b{}"}}));
    in_a.patch("theme", &PatchParams::default(), &edit).await?;
    copied("b{}").await?;

    // member-b: engaged, not granted; member-z: granted, not engaged.
    env.create(&kinds::mirror(), "n", spec("member-b")).await?;
    let c = refused(&env, "n").await?;
    let message = c["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"cluster "member-b""#), "{message}");
    assert!(message.contains("does not grant"), "{message}");
    assert!(message.contains("granted: member-a,member-z"), "{message}");
    env.create(&kinds::mirror(), "z", spec("member-z")).await?;
    let c = refused(&env, "z").await?;
    let message = c["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"cluster "member-z""#), "{message}");
    assert!(message.contains("has not engaged"), "{message}");
    for name in ["n-copy", "z-copy"] {
        assert!(copies.get_opt(name).await?.is_none(), "{name} was written");
    }
    copied("b{}").await?;

    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}
