//! A Spread's deletion waits for a member cluster that holds its children and cannot delete
//! them, and says so on its status, while the other members' children go: first a member whose
//! API server fails the host's requests, then a member whose kubeconfig was removed (released).
//! Once the member answers again, or is engaged again, its child goes and the parent with it.
//! While a member is released, a parent with children there keeps its other children converging
//! and names the member on its status; engaged again, the member's child converges too.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};
use weir::answer::MEMBER_CLUSTERS_ANNOTATION;
use weir::reconcile::placed::MEMBER_CHILDREN_CONDITION;
use weir_e2e::fleet::Members;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};
use weir_emulator::{Fault, Rule};

const MEMBERS: [&str; 3] = ["member-a", "member-b", "member-c"];

/// Whether each of `apis` holds the Deployment `name`, in order.
async fn held_by(apis: &[Api<Deployment>], name: &str) -> Option<Vec<bool>> {
    let mut held = Vec::new();
    for api in apis {
        held.push(api.get_opt(name).await.ok()?.is_some());
    }
    Some(held)
}

/// Waits until the members hold the Deployment `name` exactly as `wanted` says.
async fn members_hold(
    apis: &[Api<Deployment>],
    name: &str,
    wanted: [bool; 3],
    what: &str,
) -> anyhow::Result<()> {
    eventually(what, CONVERGE, || async {
        (held_by(apis, name).await? == wanted).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_parents_deletion_waits_for_a_member_that_cannot_delete_its_children_and_names_it()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&MEMBERS, &env.namespace).await?;
    let host = members.serve_spread(&env, &["*"]).await?;
    let apis = members.deployments(&env.namespace)?;
    let engaged = members.engaged_by(&host, &[]).await?;
    let spreads = env.api(&kinds::spread());
    let held = |name: &'static str, reason: &'static str| {
        let spreads = spreads.clone();
        async move {
            let what = format!("{name} shows its deletion held up by member-b ({reason})");
            eventually(&what, CONVERGE, || async {
                let s = spreads.get(name).await.ok()?;
                let c = condition(&s, MEMBER_CHILDREN_CONDITION)?;
                let message = c["message"].as_str()?.to_owned();
                let named = message.contains(r#""member-b""#);
                (c["reason"] == reason && c["status"] == "False" && named).then_some((s, message))
            })
            .await
        }
    };

    // Placed in every member; the parent records where.
    env.create(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": MEMBERS}),
    )
    .await?;
    members_hold(&apis, "web", [true; 3], "web is placed in every member").await?;
    let recorded = |s: &kube::api::DynamicObject| {
        let annotations = s.metadata.annotations.clone().unwrap_or_default();
        annotations.get(MEMBER_CLUSTERS_ANNOTATION).cloned()
    };
    let web = spreads.get("web").await?;
    assert_eq!(
        recorded(&web).as_deref(),
        Some("member-a,member-b,member-c")
    );

    // member-b's API server fails every request of the host (a 500: kube's client retries a
    // 503 for minutes before it fails): the parent deleted, the others' children go,
    // member-b's stays, and the parent waits, saying why.
    let member_b = members.member("member-b")?;
    let unavailable = Rule::new(&[], None, Fault::Status { code: 500 });
    member_b
        .faults()
        .set(vec![unavailable.client(weir::client::USER_AGENT)]);
    spreads.delete("web", &DeleteParams::default()).await?;
    members_hold(
        &apis,
        "web",
        [false, true, false],
        "web's children in member-a and member-c go, member-b's stays",
    )
    .await?;
    let (shown, message) = held("web", "MemberUnreachable").await?;
    assert!(message.contains("injected fault"), "{message}");
    assert!(shown.metadata.deletion_timestamp.is_some());
    // Said once, not on every pass: the parent is not written again while nothing changes.
    let version = shown.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    let still = spreads.get("web").await?;
    assert_eq!(
        still.metadata.resource_version, version,
        "rewritten while held: {}",
        still.data["status"]
    );
    assert!(held_by(&apis, "web").await == Some(vec![false, true, false]));

    let injected: Value = json!(member_b.faults().injected());
    assert!(injected["status"].as_u64() > Some(0), "{injected}");

    // It answers again: its child goes, then the parent.
    member_b.faults().clear();
    members_hold(&apis, "web", [false; 3], "web's child in member-b goes").await?;
    eventually("web is gone", CONVERGE, || async {
        spreads.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await?;

    // A parent in member-a and member-b; member-b's kubeconfig removed (released), then the
    // parent deleted: member-a's child goes, the parent waits for member-b, saying so.
    let pair = ["member-a", "member-b"];
    env.create(
        &kinds::spread(),
        "kept",
        json!({"image": "nginx", "clusters": pair}),
    )
    .await?;
    members_hold(&apis, "kept", [true, true, false], "kept is placed").await?;
    let kept = spreads.get("kept").await?;
    assert_eq!(recorded(&kept).as_deref(), Some("member-a,member-b"));
    let release_b = || async {
        std::fs::remove_file(members.kubeconfig("member-b"))?;
        eventually("member-b is released", CONVERGE, || async {
            (engaged.names() == ["member-a", "member-c"]).then_some(())
        })
        .await
    };
    release_b().await?;

    // Released, member-b holds up none of kept's other children: an edit reaches member-a and
    // kept's status names member-b; engaged again, member-b's child follows the edit too.
    env.patch_spec(&kinds::spread(), "kept", json!({"image": "busybox"}))
        .await?;
    let image_in = |i: usize| {
        let api = apis[i].clone();
        async move {
            let d = api.get_opt("kept").await.ok()??;
            let pod = d.spec?.template.spec?;
            pod.containers.first()?.image.clone()
        }
    };
    eventually(
        "kept's child in member-a follows the edit",
        CONVERGE,
        || async { (image_in(0).await.as_deref() == Some("busybox")).then_some(()) },
    )
    .await?;
    let message = eventually("kept's status names member-b", CONVERGE, || async {
        let c = condition(&spreads.get("kept").await.ok()?, "Reconciled")?;
        let message = c["message"].as_str().unwrap_or_default().to_owned();
        (c["status"] == "False" && message.contains("\"member-b\"")).then_some(message)
    })
    .await?;
    assert!(message.contains("no longer engaged"), "{message}");
    assert_eq!(
        image_in(1).await.as_deref(),
        Some("nginx"),
        "member-b unreached"
    );
    member_b.write_kubeconfig(&members.kubeconfig("member-b"))?;
    eventually(
        "kept's child in member-b follows once engaged again",
        CONVERGE,
        || async { (image_in(1).await.as_deref() == Some("busybox")).then_some(()) },
    )
    .await?;
    eventually("kept converges", CONVERGE, || async {
        let c = condition(&spreads.get("kept").await.ok()?, "Reconciled")?;
        (c["status"] == "True").then_some(())
    })
    .await?;
    release_b().await?;
    spreads.delete("kept", &DeleteParams::default()).await?;
    members_hold(
        &apis,
        "kept",
        [false, true, false],
        "kept's child in member-a goes, member-b's stays",
    )
    .await?;
    let (_, message) = held("kept", "MemberNotEngaged").await?;
    assert!(message.contains("not engaged"), "{message}");

    // Engaged again: its child goes, then the parent.
    member_b.write_kubeconfig(&members.kubeconfig("member-b"))?;
    members_hold(&apis, "kept", [false; 3], "kept's child in member-b goes").await?;
    eventually("kept is gone", CONVERGE, || async {
        spreads.get_opt("kept").await.ok()?.is_none().then_some(())
    })
    .await?;
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}
