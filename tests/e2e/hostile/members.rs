//! Hostile member clusters and hostile ways to reach them, each contained:
//! - members that answer slowly or with garbage: a Spread placing children in them and in a
//!   healthy member has its healthy child written all the same, its status names the member
//!   that fails; a Spread placing only in a healthy member converges, and is deleted, as if
//!   they were not there;
//! - a plugin naming a member the policy does not grant it: its whole answer is refused, and
//!   nothing is written in any cluster;
//! - cluster Secrets whose kubeconfig runs a program, calls an auth provider or reads a local
//!   file: refused, naming the Secret, and the member beside them is engaged and served.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use weir_e2e::fleet::Members;
use weir_e2e::weir_run::ops_get;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};

use crate::member_clusters::refusal;
use weir_emulator::{Fault, Rule};

/// A server answering every connection with bytes that are not HTTP, then closing it: what the
/// host's kubeconfig for member `garbage` points at.
async fn garbage_server() -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"\x16\x03\x01 not HTTP at all {{{\r\n\r\n")
                    .await;
            });
        }
    });
    Ok((url, task))
}

/// A kubeconfig for `server` with an inline token (one the host accepts).
fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
current-context: garbage
contexts: [{{name: garbage, context: {{cluster: garbage, user: garbage}}}}]
clusters: [{{name: garbage, cluster: {{server: '{server}'}}}}]
users: [{{name: garbage, user: {{token: not-a-cluster}}}}]
"
    )
}

#[tokio::test]
async fn a_slow_member_and_one_answering_garbage_hold_up_no_other_member_nor_parent()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&["member-a", "member-b", "slow"], &env.namespace).await?;
    members.member("slow")?.faults().set(vec![Rule::new(
        &[],
        None,
        Fault::Latency { millis: 1500 },
    )]);
    let (url, garbage) = garbage_server().await?;
    std::fs::write(members.dir().join("garbage.yaml"), kubeconfig(&url))?;
    let host = members.serve_spread(&env, &["*"]).await?;
    let engaged = host.clusters();
    eventually("all four members are engaged", CONVERGE, || async {
        (engaged.names().len() == 4).then_some(())
    })
    .await?;
    let deployments = |member: &str| -> anyhow::Result<Api<Deployment>> {
        Ok(Api::namespaced(members.client(member)?, &env.namespace))
    };

    // Placed only in a healthy member: converges, and its deletion goes through, although the
    // garbage member never lists anything.
    env.create(
        &kinds::spread(),
        "narrow",
        json!({"image": "nginx", "clusters": ["member-b"]}),
    )
    .await?;
    let in_b = deployments("member-b")?;
    eventually("narrow is placed in member-b", CONVERGE, || async {
        in_b.get_opt("narrow").await.ok()?.map(|_| ())
    })
    .await?;
    let spreads = env.api(&kinds::spread());
    spreads.delete("narrow", &DeleteParams::default()).await?;
    eventually("narrow and its child are gone", CONVERGE, || async {
        let child = in_b.get_opt("narrow").await.ok()?;
        let parent = spreads.get_opt("narrow").await.ok()?;
        (child.is_none() && parent.is_none()).then_some(())
    })
    .await?;

    // Placed in a healthy member, the slow one and the garbage one: the healthy and the slow
    // children are written, and the status names the member that fails.
    env.create(
        &kinds::spread(),
        "wide",
        json!({"image": "nginx", "clusters": ["garbage", "member-a", "slow"]}),
    )
    .await?;
    let in_a = deployments("member-a")?;
    let in_slow = deployments("slow")?;
    eventually(
        "wide is placed in member-a and in the slow member",
        CONVERGE,
        || async {
            in_a.get_opt("wide").await.ok()??;
            in_slow.get_opt("wide").await.ok()?.map(|_| ())
        },
    )
    .await?;
    let message = eventually(
        "wide's status names the garbage member",
        CONVERGE,
        || async {
            let c = condition(&spreads.get("wide").await.ok()?, "Reconciled")?;
            let message = c["message"].as_str().unwrap_or_default().to_owned();
            (c["status"] == "False" && message.contains("\"garbage\"")).then_some(message)
        },
    )
    .await?;
    assert!(!message.contains("member-a"), "{message}");
    assert_eq!(engaged.names().len(), 4, "every member stays engaged");
    garbage.abort();
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_spread_naming_a_member_the_policy_does_not_grant_its_plugin_is_refused_and_writes_nowhere()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&["member-a", "member-b"], &env.namespace).await?;
    let host = members.serve_spread(&env, &["member-a"]).await?;
    members.engaged_by(&host, &[]).await?;
    let Some(ops) = host.addr() else {
        anyhow::bail!("the host serves no /plugins");
    };
    let listing = ops_get(ops, "/plugins").await?;
    assert!(
        listing.contains("children in member clusters member-a"),
        "/plugins shows the grant: {listing}"
    );

    // Both engaged, only member-a granted: the whole answer is refused, nothing written.
    env.create(
        &kinds::spread(),
        "both",
        json!({"image": "nginx", "clusters": ["member-a", "member-b"]}),
    )
    .await?;
    let message = refusal(&env, "both").await?;
    assert!(
        message.contains("\"member-b\"") && message.contains("does not grant"),
        "{message}"
    );
    // Within its grant the same plugin places a child: the refusal was the grant's.
    env.create(
        &kinds::spread(),
        "granted",
        json!({"image": "nginx", "clusters": ["member-a"]}),
    )
    .await?;
    let in_a: Api<Deployment> = Api::namespaced(members.client("member-a")?, &env.namespace);
    let in_b: Api<Deployment> = Api::namespaced(members.client("member-b")?, &env.namespace);
    eventually("granted is placed in member-a", CONVERGE, || async {
        in_a.get_opt("granted").await.ok()?.map(|_| ())
    })
    .await?;
    for (api, cluster) in [(&in_a, "member-a"), (&in_b, "member-b")] {
        assert!(
            api.get_opt("both").await?.is_none(),
            "nothing of the refused answer is written in {cluster}"
        );
    }
    assert!(
        env.typed::<Deployment>().get_opt("both").await?.is_none(),
        "nor in the hub instead"
    );
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}

/// A kubeconfig for `server` whose user is `user` (a YAML flow mapping).
fn kubeconfig_of(server: &str, user: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
current-context: c
contexts: [{{name: c, context: {{cluster: c, user: c}}}}]
clusters: [{{name: c, cluster: {{server: '{server}'}}}}]
users: [{{name: c, user: {user}}}]
"
    )
}

#[tokio::test]
async fn cluster_secrets_that_run_a_program_call_an_auth_provider_or_read_a_file_are_refused_and_the_other_member_serves()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let members = Members::start(&["member-a"], &env.namespace).await?;
    let server = members.member("member-a")?.url();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &env.namespace);
    let post = PostParams::default();
    let hostile = [
        (
            "exec",
            "{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/pwned']}}",
        ),
        (
            "provider",
            "{auth-provider: {name: oidc, config: {idp-issuer-url: 'https://evil.example'}}}",
        ),
        (
            "file",
            "{tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}",
        ),
    ];
    for (name, user) in hostile {
        let secret = Members::secret(name, &kubeconfig_of(&server, user), &[])?;
        secrets.create(&post, &secret).await?;
    }
    let good = Members::secret("member-a", &members.kubeconfig_text("member-a")?, &[])?;
    secrets.create(&post, &good).await?;

    let host = members
        .serve_spread_from_secrets(&env, "{clusters: [\"*\"]}")
        .await?;
    let engaged = members.engaged_by(&host, &[]).await?;
    assert_eq!(engaged.refusals(), 3, "each hostile Secret is refused once");
    env.create(
        &kinds::spread(),
        "web",
        json!({"image": "nginx", "clusters": ["member-a"]}),
    )
    .await?;
    let in_a: Api<Deployment> = Api::namespaced(members.client("member-a")?, &env.namespace);
    eventually("web is placed in member-a", CONVERGE, || async {
        in_a.get_opt("web").await.ok()?.map(|_| ())
    })
    .await?;
    // A child naming a refused Secret's cluster: not engaged, so refused whole.
    env.create(
        &kinds::spread(),
        "to-exec",
        json!({"image": "nginx", "clusters": ["member-a", "exec"]}),
    )
    .await?;
    let message = refusal(&env, "to-exec").await?;
    assert!(
        message.contains("\"exec\"") && message.contains("not engaged"),
        "{message}"
    );
    assert!(in_a.get_opt("to-exec").await?.is_none());
    assert_eq!(
        engaged.names(),
        ["member-a"],
        "no hostile Secret is engaged"
    );
    host.shutdown().await;
    members.shutdown().await;
    Ok(())
}
