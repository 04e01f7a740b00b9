//! A member cluster's credentials rotated under a running host: its kubeconfig file rewritten
//! with a new token for the same server, the old token then revoked. The host swaps the
//! credentials in place: its watches of the member resume under the new token without listing
//! anything again, a hand edit in the member is put back under the new token, and no request
//! is refused for its credentials.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use weir_e2e::fleet::{Members, account_token};
use weir_e2e::weir_run::{ops_get, sample};
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds};
use weir_emulator::RequestRecord;

const MEMBER: &str = "member-a";

/// The host's requests among `records` (its `User-Agent`).
fn host_requests(records: Vec<RequestRecord>) -> Vec<RequestRecord> {
    let ours = |r: &RequestRecord| {
        r.user_agent
            .as_deref()
            .is_some_and(|a| a.starts_with("weir/"))
    };
    records.into_iter().filter(ours).collect()
}

#[tokio::test]
async fn rotated_member_credentials_are_used_in_place_and_nothing_is_listed_again()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start_secure(&[MEMBER], &env.namespace).await?;
    let member = members.member(MEMBER)?;
    let ns = env.namespace.clone();
    let old = account_token(member, &ns, "weir-old").await?;
    let new = account_token(member, &ns, "weir-new").await?;
    members.write_token(MEMBER, &old)?;

    let host = members.serve_spread(&env, &["*"]).await?;
    let engaged = members.engaged_by(&host, &[]).await?;
    env.create(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": [MEMBER]}),
    )
    .await?;
    let deployments = Api::<Deployment>::namespaced(member.client(), &ns);
    let image = |d: &Deployment| {
        let pod = d.spec.as_ref()?.template.spec.as_ref()?;
        pod.containers.first()?.image.clone()
    };
    eventually("web is placed in the member", CONVERGE, || async {
        let d = deployments.get_opt("web").await.ok()??;
        (image(&d).as_deref() == Some("nginx")).then_some(())
    })
    .await?;
    let before = host_requests(member.requests());
    let old_user = format!("system:serviceaccount:{ns}:weir-old");
    assert!(
        !before.is_empty() && before.iter().all(|r| r.user.as_deref() == Some(&old_user)),
        "before the rotation the host speaks as weir-old: {:?}",
        before.iter().map(|r| &r.user).collect::<Vec<_>>()
    );

    // The rotation: a new token in the file, then the old one revoked.
    let mut since_rotation = member.request_cursor();
    members.write_token(MEMBER, &new)?;
    eventually(
        "the host rotates the member's credentials",
        CONVERGE,
        || async { (engaged.rotations() == 1).then_some(()) },
    )
    .await?;
    let mut since_swap = member.request_cursor();
    Api::<ServiceAccount>::namespaced(member.client(), &ns)
        .delete("weir-old", &DeleteParams::default())
        .await?;
    // Every open watch ends: the host must open them again, now with the new token.
    member.drop_watches();
    let edit = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "busybox"}]}}}});
    deployments
        .patch("web", &PatchParams::default(), &Patch::Strategic(edit))
        .await?;
    eventually(
        "the hand edit in the member is put back",
        CONVERGE,
        || async {
            let d = deployments.get_opt("web").await.ok()??;
            (image(&d).as_deref() == Some("nginx")).then_some(())
        },
    )
    .await?;
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let after_swap = host_requests(member.requests_since(&mut since_swap));
    let new_user = format!("system:serviceaccount:{ns}:weir-new");
    let by = |r: &RequestRecord| r.user.as_deref() == Some(new_user.as_str());
    assert!(
        after_swap
            .iter()
            .any(|r| r.path == path && r.is_watch() && by(r)),
        "the Deployments' watch was opened again with the new token"
    );
    assert!(
        after_swap
            .iter()
            .any(|r| r.is_write() && r.path.starts_with(&path) && by(r)),
        "the edit was put back with the new token"
    );
    let unlike: Vec<_> = after_swap
        .iter()
        .filter(|r| !by(r) || r.status == 401)
        .map(|r| (&r.method, &r.path, r.status, &r.user))
        .collect();
    assert!(
        unlike.is_empty(),
        "after the swap every request carries the new token: {unlike:?}"
    );
    let relists: Vec<_> = host_requests(member.requests_since(&mut since_rotation))
        .into_iter()
        .filter(|r| r.method == "GET" && !r.is_watch() && r.path.ends_with("/deployments"))
        .map(|r| (r.path, r.query))
        .collect();
    assert!(
        relists.is_empty(),
        "the rotation listed nothing again: {relists:?}"
    );
    assert_eq!(engaged.names(), [MEMBER], "the member stayed engaged");
    let Some(ops) = host.addr() else {
        anyhow::bail!("the host serves no /metrics");
    };
    let metrics = ops_get(ops, "/metrics").await?;
    assert_eq!(
        sample(&metrics, "weir_cluster_credentials_rotated"),
        Some(1.0),
        "{metrics}"
    );
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}
