//! The seed's drift case "rollout undo": a Blog's image is upgraded, someone runs
//! `kubectl rollout undo` on its Deployment, and Weir puts the Blog's desired template back.
//! On the emulator the workload simulation keeps the ReplicaSet history `undo` reads.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, wait_ready};

/// Run the real kubectl against the test's API server, in the test's namespace.
async fn kubectl(env: &TestEnv, home: &Path, args: &[&str]) -> Result<String> {
    let kubeconfig = match (&env.emulator, std::env::var_os("KUBECONFIG")) {
        (Some(emulator), _) => {
            let path = home.join("kubeconfig");
            emulator.write_kubeconfig(&path)?;
            path.into_os_string()
        }
        (None, Some(path)) => path,
        (None, None) => anyhow::bail!("no emulator and no KUBECONFIG"),
    };
    let out = tokio::process::Command::new("kubectl")
        .args(args)
        .args(["--namespace", &env.namespace])
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .context("running kubectl (is it on PATH?)")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    ensure!(
        out.status.success(),
        "kubectl {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(stdout)
}

fn image(d: &Deployment) -> Option<String> {
    d.spec.as_ref()?.template.spec.as_ref()?.containers[0]
        .image
        .clone()
}

#[tokio::test]
async fn a_rollout_undo_of_a_blogs_deployment_is_put_back() -> Result<()> {
    let env = TestEnv::start().await?;
    let home = tempfile::tempdir()?;
    let host = env.serve("blog").await?;
    env.create(
        &kinds::blog(),
        "b",
        serde_json::json!({"title": "t", "replicas": 2, "image": "nginx:1.27"}),
    )
    .await?;
    wait_ready(&env.api(&kinds::blog()), "b").await?;
    let deployments = env.typed::<Deployment>();

    // The Blog's upgrade rolls its Deployment out to a second revision.
    env.patch_spec(
        &kinds::blog(),
        "b",
        serde_json::json!({"image": "nginx:1.28"}),
    )
    .await?;
    eventually("the Deployment runs nginx:1.28", CONVERGE, || async {
        let d = deployments.get("b").await.ok()?;
        (image(&d).as_deref() == Some("nginx:1.28")).then_some(())
    })
    .await?;
    kubectl(
        &env,
        home.path(),
        &["rollout", "status", "deployment/b", "--timeout=60s"],
    )
    .await?;
    let history = kubectl(&env, home.path(), &["rollout", "history", "deployment/b"]).await?;
    ensure!(
        history
            .lines()
            .filter(|l| l.starts_with(char::is_numeric))
            .count()
            == 2,
        "two revisions to go back between: {history}"
    );
    let before = deployments.get("b").await?.metadata.generation.unwrap_or(0);

    // Someone rolls the Deployment back behind the Blog's back.
    let undo = kubectl(&env, home.path(), &["rollout", "undo", "deployment/b"]).await?;
    ensure!(undo.contains("rolled back"), "kubectl rollout undo: {undo}");

    // Weir puts the Blog's template back: a second template change after the undo.
    let restored = eventually("the Blog's image is back", CONVERGE, || async {
        let d = deployments.get("b").await.ok()?;
        (image(&d).as_deref() == Some("nginx:1.28") && d.metadata.generation? >= before + 2)
            .then_some(d)
    })
    .await?;
    ensure!(
        restored.metadata.generation == Some(before + 2),
        "exactly the undo and the revert changed the template (generation {before} → {:?})",
        restored.metadata.generation
    );
    kubectl(
        &env,
        home.path(),
        &["rollout", "status", "deployment/b", "--timeout=60s"],
    )
    .await?;
    eventually("every Pod runs the Blog's image", CONVERGE, || async {
        let pods = kubectl(
            &env,
            home.path(),
            &[
                "get",
                "pods",
                "-o",
                "jsonpath={.items[*].spec.containers[0].image}",
            ],
        )
        .await
        .ok()?;
        (pods.split_whitespace().collect::<Vec<_>>() == ["nginx:1.28", "nginx:1.28"]).then_some(())
    })
    .await?;
    host.shutdown().await;
    Ok(())
}
