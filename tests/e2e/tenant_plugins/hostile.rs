//! A tenant plugin reaching beyond its namespace: refused in its status, or its answer refused
//! with nothing written.

use super::*;

#[tokio::test]
async fn a_tenant_plugin_reaching_beyond_its_namespace_is_refused_or_contained() -> Result<()> {
    let env = TestEnv::start().await?;
    let ns = env.namespace.clone();
    let client = env.client.clone();
    env.install_crd(&plugin("hostile")?).await?;
    env.install_crd(&plugin("hostile-claims")?).await?;
    env.install_crd(&plugin("blog")?).await?;
    env.install_crd(&plugin("related")?).await?;
    install_plugin_crd(&env).await?;
    install_tenant_plugin_crd(&client).await?;
    let other = format!("{ns}-other");
    namespace(&client, &other).await?;
    let files = [
        "hostile.wasm",
        "hostile-claims.wasm",
        "hostile-unserved.wasm",
        "blog.wasm",
        "related.wasm",
    ];
    for file in files {
        component(&client, &ns, file.trim_end_matches(".wasm"), file).await?;
    }

    // Attack and Claim are granted (and installed); Ghost is not granted. The policy widens a
    // cluster Plugin named `blog`.
    let mut policy = Policy::default();
    tenants(
        &mut policy,
        &[&ns],
        &[
            ("test.weir.dev", "Attack"),
            ("test.weir.dev", "Claim"),
            ("test.weir.dev", "Mirror"),
            ("weir.dev", "Blog"),
        ],
    );
    let widened = Grant {
        namespaces: vec![other.clone()],
        secret_data: true,
        ..Grant::default()
    };
    policy.plugins.insert("blog".into(), widened);
    let store = tempfile::tempdir()?;
    let host = host(&env, store.path(), policy, true).await?;

    let source = |file: &'static str| (file.trim_end_matches(".wasm"), file);
    apply(
        &client,
        &ns,
        "ghost",
        source("hostile-unserved.wasm"),
        json!({}),
    )
    .await?;
    apply(
        &client,
        &ns,
        "claims",
        source("hostile-claims.wasm"),
        json!({}),
    )
    .await?;
    apply(&client, &ns, "blog", source("blog.wasm"), json!({})).await?;
    let pull_secret = json!({"pullSecret": {"namespace": "weir", "name": "weir-registry"}});
    apply(&client, &ns, "borrowed", source("blog.wasm"), pull_secret).await?;
    apply(&client, &ns, "hostile", source("hostile.wasm"), json!({})).await?;
    apply(&client, &ns, "related", source("related.wasm"), json!({})).await?;

    let namespaced = |name: &'static str| (ns.as_str(), name);
    refused(
        &client,
        namespaced("ghost"),
        "NotAdmitted",
        "not granted to namespace",
    )
    .await?;
    refused(&client, namespaced("claims"), "NotAdmitted", "Namespace").await?;
    refused(
        &client,
        namespaced("blog"),
        "NotAdmitted",
        "no widened grant",
    )
    .await?;
    refused(
        &client,
        namespaced("borrowed"),
        "OutsideNamespace",
        "pullSecret weir",
    )
    .await?;
    status_until(
        &client,
        namespaced("hostile"),
        "the hostile plugin is loaded",
        |s| condition(s, "Loaded").0 == "True",
    )
    .await?;

    // Served as a tenant's, the hostile plugin's child in another namespace is refused and
    // nothing is written there.
    let attack = json!({"attack": "elsewhere", "target": other});
    env.create(&weir_e2e::hostile::attack_kind(), "elsewhere", attack)
        .await?;
    let parent = env.api(&weir_e2e::hostile::attack_kind());
    let message = eventually("the attack's answer is refused", CONVERGE, || async {
        let p = parent.get("elsewhere").await.ok()?;
        let c = weir_e2e::condition(&p, "Reconciled")?;
        (c["status"] == "False").then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await?;
    assert!(message.contains(&other), "{message}");
    let there = Api::<ConfigMap>::namespaced(client.clone(), &other)
        .list(&ListParams::default())
        .await?;
    assert!(
        there.items.iter().all(|c| c.name_any() != "elsewhere"),
        "the hostile tenant wrote into {other}"
    );

    // Nor does a tenant's plugin read another namespace's objects: a Mirror naming a
    // ConfigMap of the other namespace is refused, and nothing is copied.
    status_until(
        &client,
        namespaced("related"),
        "the related plugin is loaded",
        |s| condition(s, "Loaded").0 == "True",
    )
    .await?;
    let secret: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "theirs"}, "data": {"css": "their secret"}}),
    )?;
    Api::<ConfigMap>::namespaced(client.clone(), &other)
        .create(&PostParams::default(), &secret)
        .await?;
    let spec = json!({"source": "theirs", "key": "css", "sourceNamespace": other});
    env.create(&kinds::mirror(), "peek", spec).await?;
    let mirrors = env.api(&kinds::mirror());
    let message = eventually(
        "the read of the other namespace is refused",
        CONVERGE,
        || async {
            let m = mirrors.get("peek").await.ok()?;
            let c = weir_e2e::condition(&m, "Reconciled")?;
            (c["reason"] == "Refused").then(|| c["message"].as_str().unwrap_or_default().to_owned())
        },
    )
    .await?;
    assert!(
        message.contains(&format!("namespace {other:?}")),
        "{message}"
    );
    let copied = Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .get_opt("peek-copy")
        .await?;
    assert!(
        copied.is_none(),
        "a copy of another namespace's ConfigMap: {copied:?}"
    );
    host.shutdown().await;
    Ok(())
}
