//! Member clusters from Secrets (`weir run --cluster-secrets`): a Secret of the host's
//! namespace with the selected label engages the cluster it holds a kubeconfig of, named by
//! the Secret and labelled with its labels; the policy grants the Spread the members labelled
//! `env=prod` only; relabelling a Secret grants its member, deleting it releases the member,
//! creating it again engages it again. A Secret without the label is not a member.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use weir_e2e::fleet::Members;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};

#[tokio::test]
async fn members_come_and_go_with_their_labelled_secrets_and_are_granted_by_their_labels()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&["member-a", "member-b"], &env.namespace).await?;
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &env.namespace);
    let post = PostParams::default();
    let a = Members::secret(
        "member-a",
        &members.kubeconfig_text("member-a")?,
        &[("env", "prod")],
    )?;
    let b = Members::secret(
        "member-b",
        &members.kubeconfig_text("member-b")?,
        &[("env", "dev")],
    )?;
    secrets.create(&post, &a).await?;
    secrets.create(&post, &b).await?;
    // The same kubeconfig without the selected label: not a member.
    let mut unselected = Members::secret("unselected", &members.kubeconfig_text("member-a")?, &[])?;
    unselected.metadata.labels = None;
    secrets.create(&post, &unselected).await?;

    let grant = "{clusterSelector: {matchLabels: {env: prod}}}";
    let host = members.serve_spread_from_secrets(&env, grant).await?;
    let engaged = members.engaged_by(&host, &[]).await?;
    assert_eq!(
        engaged
            .labels("member-a")
            .as_ref()
            .map(|l| l["env"].as_str()),
        Some("prod")
    );
    let [in_a, in_b] = <[Api<Deployment>; 2]>::try_from(members.deployments(&env.namespace)?)
        .map_err(|_| anyhow::anyhow!("two members"))?;
    let spreads = env.api(&kinds::spread());

    // member-a is labelled env=prod: granted.
    env.create(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": ["member-a"]}),
    )
    .await?;
    eventually("web is placed in member-a", CONVERGE, || async {
        in_a.get_opt("web").await.ok()?.map(|_| ())
    })
    .await?;

    // member-b is labelled env=dev: refused, naming the selector, nothing written.
    env.create(
        &kinds::spread(),
        "dev",
        json!({"image": "nginx", "clusters": ["member-b"]}),
    )
    .await?;
    let message = eventually("dev is refused", CONVERGE, || async {
        let c = condition(&spreads.get("dev").await.ok()?, "Reconciled")?;
        let message = c["message"].as_str()?.to_owned();
        (c["status"] == "False").then_some(message)
    })
    .await?;
    assert!(
        message.contains("\"member-b\"") && message.contains("labelled env=prod"),
        "{message}"
    );
    assert!(in_b.get_opt("dev").await?.is_none());

    // Relabelled env=prod: granted, without a new engagement (nothing listed again).
    let rotations = engaged.rotations();
    let relabel = json!({"metadata": {"labels": {"env": "prod"}}});
    secrets
        .patch("member-b", &PatchParams::default(), &Patch::Merge(&relabel))
        .await?;
    eventually("member-b is relabelled", CONVERGE, || async {
        let env = engaged.labels("member-b")?.get("env").cloned();
        (env.as_deref() == Some("prod")).then_some(())
    })
    .await?;
    assert_eq!(engaged.rotations(), rotations, "a relabel rotates nothing");
    let edit = json!({"spec": {"image": "nginx:1.27", "clusters": ["member-b"]}});
    spreads
        .patch("dev", &PatchParams::default(), &Patch::Merge(&edit))
        .await?;
    eventually("dev is placed in member-b", CONVERGE, || async {
        in_b.get_opt("dev").await.ok()?.map(|_| ())
    })
    .await?;

    // The Secret deleted: member-a released; created again: engaged again, web still there.
    secrets.delete("member-a", &DeleteParams::default()).await?;
    eventually("member-a is released", CONVERGE, || async {
        (engaged.names() == ["member-b"]).then_some(())
    })
    .await?;
    secrets.create(&post, &a).await?;
    members.engaged_by(&host, &[]).await?;
    assert!(in_a.get_opt("web").await?.is_some());
    assert_eq!(engaged.refusals(), 0, "no Secret was refused");
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}
