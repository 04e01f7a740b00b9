//! Members that answer slowly or with garbage are contained: a Spread placing children in them
//! and in a healthy member has its healthy child written all the same, its status names the
//! member that fails; a Spread placing only in a healthy member converges, and is deleted, as
//! if they were not there.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use weir_e2e::fleet::Members;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};
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
