//! A Spread in the hub places its Deployments in three member clusters of an emulated fleet:
//! each lands in its member marked with its parent (no owner reference), a converged parent
//! writes nothing in any cluster, a hand edit in a member is put back, a deleted child is
//! recreated, a foreign object of the same name is refused and left alone, a member no longer
//! named is pruned, and the parent deleted takes every child in every member with it. Then
//! the shipped binary, SIGKILLed after the children exist and restarted after the parent was
//! deleted, still leaves no orphan.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use weir::answer::{MEMBER_CLUSTERS_ANNOTATION, PARENT_CLUSTER_ANNOTATION, PARENT_NAME_ANNOTATION};
use weir::clusters::PARENT_UID_LABEL;
use weir::reconcile::members::MEMBERS_FINALIZER;
use weir_e2e::fleet::Members;
use weir_e2e::host::RunArgs;
use weir_e2e::weir_run::WeirRun;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin};

const MEMBERS: [&str; 3] = ["member-a", "member-b", "member-c"];

/// The Deployment `name` in each member, once every one of them holds it.
async fn placed(
    apis: &[Api<Deployment>],
    name: &str,
    replicas: i32,
) -> anyhow::Result<Vec<Deployment>> {
    eventually(
        &format!("{name} is placed in every member"),
        CONVERGE,
        || async {
            let mut found = Vec::new();
            for api in apis {
                let d = api.get_opt(name).await.ok()??;
                (d.spec.as_ref()?.replicas == Some(replicas)).then_some(())?;
                found.push(d);
            }
            Some(found)
        },
    )
    .await
}

/// Waits until no member holds the Deployment `name`.
async fn gone(apis: &[Api<Deployment>], name: &str, what: &str) -> anyhow::Result<()> {
    eventually(what, CONVERGE, || async {
        for api in apis {
            if api.get_opt(name).await.ok()?.is_some() {
                return None;
            }
        }
        Some(())
    })
    .await
}

fn foreign(name: &str) -> anyhow::Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "busybox"}]}},
        },
    }))?)
}

#[tokio::test]
async fn a_hub_parent_owns_its_children_in_three_members_by_its_mark_until_it_is_deleted()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&MEMBERS, &env.namespace).await?;
    let host = members.serve_spread(&env, &["*"]).await?;
    let apis = members.deployments(&env.namespace)?;
    members.engaged_by(&host, &[]).await?;

    // Placed in each member, marked with its parent, owned by nothing there; none in the hub.
    let spreads = env.api(&kinds::spread());
    env.create(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": MEMBERS}),
    )
    .await?;
    let children = placed(&apis, "web", 1).await?;
    let parent = spreads.get("web").await?;
    let uid = parent.metadata.uid.clone().unwrap_or_default();
    for d in &children {
        let meta = &d.metadata;
        assert_eq!(
            meta.labels.as_ref().and_then(|l| l.get(PARENT_UID_LABEL)),
            Some(&uid)
        );
        let annotations = meta.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations
                .get(PARENT_CLUSTER_ANNOTATION)
                .map(String::as_str),
            Some("local")
        );
        let key = format!("{}/web", env.namespace);
        assert_eq!(annotations.get(PARENT_NAME_ANNOTATION), Some(&key));
        assert!(meta.owner_references.is_none(), "{meta:?}");
    }
    assert!(
        env.typed::<Deployment>().get_opt("web").await?.is_none(),
        "none in the hub"
    );
    let finalizers = parent.metadata.finalizers.clone().unwrap_or_default();
    assert!(
        finalizers.iter().any(|f| f == MEMBERS_FINALIZER),
        "{finalizers:?}"
    );

    // Ready in every member; converged, it writes nothing anywhere.
    eventually("the Spread shows 3/3 ready", CONVERGE, || async {
        let s = spreads.get("web").await.ok()?;
        (s.data["status"]["ready"] == "3/3").then_some(())
    })
    .await?;
    weir_e2e::quiet(&host, Duration::from_millis(700)).await?;
    let writes = host.metrics().writes_total();
    let mut cursors: Vec<_> = MEMBERS
        .iter()
        .map(|m| Ok(members.member(m)?.request_cursor()))
        .collect::<anyhow::Result<_>>()?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        host.metrics().writes_total(),
        writes,
        "a converged parent writes nothing"
    );
    for (m, cursor) in MEMBERS.iter().zip(&mut cursors) {
        let wrote: Vec<_> = members
            .member(m)?
            .requests_since(cursor)
            .into_iter()
            .filter(|r| r.is_write())
            .collect();
        assert!(
            wrote.is_empty(),
            "{m} is written to while converged: {wrote:?}"
        );
    }

    // A hand edit in member-b is put back; a deletion in member-c is undone.
    let edit = json!({"spec": {"replicas": 5}});
    apis[1]
        .patch("web", &PatchParams::default(), &Patch::Merge(&edit))
        .await?;
    apis[2].delete("web", &DeleteParams::default()).await?;
    let old_c = children[2].metadata.uid.clone();
    eventually(
        "member-b's edit is put back and member-c's child recreated",
        CONVERGE,
        || async {
            let b = apis[1].get("web").await.ok()?;
            let c = apis[2].get_opt("web").await.ok()??;
            let back = b.spec?.replicas == Some(1);
            (back && c.metadata.uid != old_c).then_some(())
        },
    )
    .await?;

    // A foreign Deployment in member-a keeps its name: refused, named, untouched.
    apis[0]
        .create(&PostParams::default(), &foreign("clash")?)
        .await?;
    env.create(
        &kinds::spread(),
        "clash",
        json!({"image": "nginx", "clusters": ["member-a"]}),
    )
    .await?;
    let message = eventually("clash is refused", CONVERGE, || async {
        let c = condition(&spreads.get("clash").await.ok()?, "Reconciled")?;
        (c["reason"] == "Refused").then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await?;
    assert!(
        message.contains("member-a") && message.contains("clash"),
        "{message}"
    );
    let kept = apis[0].get("clash").await?;
    assert_eq!(
        kept.spec.and_then(|s| s.replicas),
        Some(4),
        "the foreign object is untouched"
    );
    assert!(
        kept.metadata
            .labels
            .unwrap_or_default()
            .get(PARENT_UID_LABEL)
            .is_none()
    );

    // A member no longer named loses its child; the others keep theirs.
    env.patch_spec(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": ["member-a", "member-b"]}),
    )
    .await?;
    gone(&apis[2..], "web", "member-c's child is pruned").await?;
    placed(&apis[..2], "web", 1).await?;
    // Its cache shows none left there: member-c leaves the parent's record.
    eventually("member-c leaves the record", CONVERGE, || async {
        let s = spreads.get("web").await.ok()?;
        let annotations = s.metadata.annotations.unwrap_or_default();
        let recorded = annotations.get(MEMBER_CLUSTERS_ANNOTATION)?;
        (recorded == "member-a,member-b").then_some(())
    })
    .await?;

    // The parent deleted: every child in every member goes, then the parent.
    spreads.delete("web", &DeleteParams::default()).await?;
    gone(&apis, "web", "every member's child is gone").await?;
    eventually("the Spread is gone", CONVERGE, || async {
        spreads.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await?;
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_host_killed_after_placing_children_and_restarted_after_the_parent_went_leaves_no_orphan()
-> anyhow::Result<()> {
    // A second process loading its plugin within the describe deadline: kept apart from the
    // scenarios that saturate the CPU, as the other kills are.
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start().await?;
    let Some(hub) = &env.emulator else {
        anyhow::bail!("this scenario runs on the emulator (its members are emulators)");
    };
    let names = &MEMBERS[..2];
    let members = Members::start(names, &env.namespace).await?;
    env.install_crd(&plugin("spread")?).await?;
    let dir = tempfile::Builder::new().prefix("weir-members-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    hub.write_kubeconfig(&kubeconfig)?;
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(weir_e2e::built("spread.wasm"), plugins.join("spread.wasm"))?;
    let args = RunArgs {
        namespace: Some(env.namespace.clone()),
        extra: members.flags("spread")?,
        ..RunArgs::plugins(&plugins, &kubeconfig)
    };
    let mut host = WeirRun::spawn(&WeirRun::debug_binary()?, dir.path(), args)?;
    let apis: Vec<Api<Deployment>> = names
        .iter()
        .map(|m| Ok(Api::namespaced(members.client(m)?, &env.namespace)))
        .collect::<anyhow::Result<_>>()?;
    env.create(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": names}),
    )
    .await?;
    placed(&apis, "web", 1)
        .await
        .map_err(|e| e.context(host.log_tail(30)))?;
    // Its workers waited for the first scan of the members: the Spread, created as the host
    // started, was never refused for naming a member about to be engaged.
    let log = host.log_tail(10_000);
    assert!(!log.contains("has not engaged"), "{log}");

    // Killed with its children placed; the parent deleted while no host runs: the host's
    // finalizer holds it.
    host.kill()?;
    let spreads = env.api(&kinds::spread());
    spreads.delete("web", &DeleteParams::default()).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = spreads.get("web").await?;
    assert!(held.metadata.deletion_timestamp.is_some());
    placed(&apis, "web", 1).await?;

    // Restarted, it finds the children again by their mark in each member's cache.
    host.restart()?;
    gone(
        &apis,
        "web",
        "every member's child is gone after the restart",
    )
    .await
    .map_err(|e| e.context(host.log_tail(30)))?;
    eventually("the Spread is gone", CONVERGE, || async {
        spreads.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await?;
    host.check_running()?;
    host.kill()?;
    members.shutdown().await;
    Ok(())
}
