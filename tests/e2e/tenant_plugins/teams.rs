//! A team's ServiceAccount creates a TenantPlugin in its namespace only; two teams serve the Blog
//! kind, each its own version; a namespace of no tenant is left alone; the shares on /metrics;
//! a team's candidate rolled out in its namespace only; a flood in one namespace leaves the
//! other's Blog converging.

use weir::rollout::{PhaseStore, Request};

use super::*;

/// A client of `emulator` with the token of ServiceAccount `ns/name`.
async fn client_of(emulator: &Emulator, ns: &str, name: &str) -> Result<Client> {
    let token = emulator
        .service_account_token(ns, name)
        .context("no token for the ServiceAccount")?;
    let mut kubeconfig = serde_json::to_value(emulator.kubeconfig())?;
    kubeconfig["users"][0]["user"]["token"] = json!(token);
    let kubeconfig = serde_json::from_value(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

/// The ClusterRole `name` as `deploy/rbac/tenant-plugins.yaml` ships it.
fn shipped_cluster_role(name: &str) -> Result<ClusterRole> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/rbac/tenant-plugins.yaml");
    let text = std::fs::read_to_string(&path)?;
    for document in text.split("\n---\n") {
        let object: Value = weir::yaml::from_str(document)?;
        if object["kind"] == "ClusterRole" && object["metadata"]["name"] == name {
            return Ok(serde_json::from_value(object)?);
        }
    }
    bail!("{} has no ClusterRole {name}", path.display())
}

/// The team's ServiceAccount `deployer` in `ns`, bound there (and only there) to the shipped
/// `weir-tenant-plugin-editor`.
async fn team(client: &Client, ns: &str) -> Result<()> {
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "deployer"}}))?;
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &sa)
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "deployer-plugins"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "weir-tenant-plugin-editor"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": ns}],
    }))?;
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_team_serves_its_own_plugin_in_its_namespace_only_and_two_teams_serve_one_kind()
-> Result<()> {
    let (a, b, elsewhere) = ("team-a", "team-b", "elsewhere");
    let env = emulated_teams(true, &[a, b, elsewhere]).await?;
    let admin = env.client.clone();
    let editor = shipped_cluster_role("weir-tenant-plugin-editor")?;
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &editor)
        .await?;
    team(&admin, a).await?;
    let emulator = env.emulator.as_ref().context("the test's own emulator")?;
    let deployer = client_of(emulator, a, "deployer").await?;

    // RBAC decides who may: team A's ServiceAccount in its namespace, and nowhere else.
    component(&admin, a, "blog-component", "blog.wasm").await?;
    component(&admin, b, "blog-component", "blog-v2.wasm").await?;
    apply(
        &deployer,
        a,
        "blog",
        ("blog-component", "blog.wasm"),
        json!({}),
    )
    .await?;
    let forbidden = apply(
        &deployer,
        b,
        "blog",
        ("blog-component", "blog-v2.wasm"),
        json!({}),
    )
    .await;
    let denied = forbidden
        .as_ref()
        .err()
        .and_then(|e| e.downcast_ref::<kube::Error>())
        .is_some_and(|e| matches!(e, kube::Error::Api(s) if s.code == 403));
    assert!(
        denied,
        "team A created a TenantPlugin in team B's namespace: {forbidden:?}"
    );
    apply(
        &admin,
        b,
        "blog",
        ("blog-component", "blog-v2.wasm"),
        json!({}),
    )
    .await?;
    component(&admin, elsewhere, "blog-component", "blog.wasm").await?;
    let from = ("blog-component", "blog.wasm");
    apply(&admin, elsewhere, "blog", from, json!({})).await?;

    let mut policy = Policy::default();
    tenants(&mut policy, &[a, b], &[("weir.dev", "Blog")]);
    if let Some(team_b) = policy.tenants.get_mut(b) {
        team_b.kinds.push(GroupKind::new("test.weir.dev", "Attack"));
    }
    let store = tempfile::tempdir()?;
    let host = host(&env, store.path(), policy, false).await?;
    for ns in [a, b] {
        status_until(
            &admin,
            (ns, "blog"),
            "the tenant's Blog plugin is loaded",
            |s| condition(s, "Loaded").0 == "True",
        )
        .await?;
    }
    // A namespace the policy gives no tenant: its TenantPlugin is only refused, and says why.
    refused(&admin, (elsewhere, "blog"), "NotATenant", "not a tenant's").await?;

    // Each namespace's Blog is reconciled by its own team's version; a Blog of a namespace that
    // is no tenant's is left alone (no cluster Plugin serves the kind).
    for ns in [a, b, elsewhere] {
        create_blog(&admin, ns, "home").await?;
    }
    wait_ready(&blogs_in(&admin, a), "home").await?;
    wait_ready(&blogs_in(&admin, b), "home").await?;
    let label = |ns: &'static str| {
        let admin = admin.clone();
        async move {
            let page = Api::<ConfigMap>::namespaced(admin, ns)
                .get("home-page")
                .await?;
            anyhow::Ok(page.labels().get("weir.dev/hot-swapped").cloned())
        }
    };
    assert_eq!(label(a).await?, None, "team A serves v1");
    assert_eq!(label(b).await?.as_deref(), Some("v2"), "team B serves v2");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let untouched = blogs_in(&admin, elsewhere).get("home").await?;
    assert!(
        untouched.data.get("status").is_none_or(Value::is_null),
        "a Blog of no tenant's namespace was reconciled: {:?}",
        untouched.data.get("status")
    );
    let there = Api::<ConfigMap>::namespaced(admin.clone(), elsewhere)
        .list(&ListParams::default())
        .await?;
    assert!(
        there.items.iter().all(|c| c.name_any() != "home-page"),
        "a child was written in {elsewhere}"
    );

    // `/plugins` lists each tenant's plugin by its TenantPlugin, the host ready with them.
    let addr = host.addr().map(|a| a.to_string()).unwrap_or_default();
    let listed = weir::listing::fetch(&addr).await?;
    let files: Vec<String> = listed
        .iter()
        .map(|l| l.file.display().to_string())
        .collect();
    assert_eq!(
        files,
        ["TenantPlugin/team-a/blog", "TenantPlugin/team-b/blog"],
        "{listed:?}"
    );
    assert!(
        listed.iter().all(|l| l.synced && l.widened.is_empty()),
        "{listed:?}"
    );
    assert!(host.is_ready());

    // Team A rolls a candidate out (Blog v2, from a ConfigMap of team-a): it is shadowed beside
    // v1 in team-a's controllers, and team B's plugin has no rollout.
    component(&admin, a, "blog-v2-component", "blog-v2.wasm").await?;
    let candidate = json!({"candidate": {"configMap": {
        "namespace": a, "name": "blog-v2-component", "key": "blog-v2.wasm",
    }}});
    let from = ("blog-component", "blog.wasm");
    apply(&deployer, a, "blog", from, candidate).await?;
    let v2 = plugin("blog-v2")?.sha256().to_owned();
    let rollout = eventually("team A's candidate is rolled out", LOAD_BUDGET, || async {
        let listed = weir::listing::fetch(&addr).await.ok()?;
        let row = listed.iter().find(|l| l.file.ends_with("team-a/blog"))?;
        let rollout = row.rollout.clone().filter(|r| r.sha256 == v2)?;
        let other = listed.iter().find(|l| l.file.ends_with("team-b/blog"))?;
        other.rollout.is_none().then_some(rollout)
    })
    .await?;
    println!(
        "team A's candidate: {} since {}",
        rollout.phase, rollout.phase_since
    );
    // Team A aborts it (`weir rollout abort -n team-a blog`): a refusal made after the load, on
    // its TenantPlugin's status as one made before it would be, naming the version and digest.
    PhaseStore::new(admin.clone(), a, "e2e")
        .ask("blog", Request::Abort)
        .await?;
    let status = status_until(
        &admin,
        (a, "blog"),
        "team A's rolled-back candidate is on its TenantPlugin",
        |s| condition(s, "CandidateLoaded") == ("False".into(), "RolledBack".into()),
    )
    .await?;
    let said = status
        .conditions
        .iter()
        .find(|c| c.type_ == "CandidateLoaded")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    for needle in ["blog@", "sha256:", "aborted by an operator"] {
        assert!(said.contains(needle), "{needle:?} is not in {said:?}");
    }
    println!("team A's candidate: CandidateLoaded=False RolledBack: {said}");

    // Each tenant's share is on /metrics: its slots, its cache, its requests.
    let text = host.metrics().encode();
    let value = |name: &str, ns: &str| -> Option<f64> {
        let prefix = format!("{name}{{tenant=\"{ns}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse().ok())
    };
    for ns in [a, b] {
        assert_eq!(
            value("weir_tenant_reconcile_slots", ns),
            Some(4.0),
            "{text}"
        );
        let cached = value("weir_tenant_cached_objects", ns).unwrap_or_default();
        assert!(
            cached >= 4.0,
            "{ns}: {cached} cached (a Blog, its ConfigMap, Deployment, Service)"
        );
        let requests = value("weir_tenant_api_requests_total", ns).unwrap_or_default();
        assert!(
            requests >= 4.0,
            "{ns}: {requests} requests (watches, applies, status)"
        );
    }
    assert_eq!(value("weir_tenant_reconcile_slots", elsewhere), None);

    // Team B floods: the hostile plugin as its own, requeueing at once and churning children.
    // Team A's next Blog converges within the budget the hostile suite gives the Blog.
    env.install_crd(&plugin("hostile")?).await?;
    component(&admin, b, "hostile-component", "hostile.wasm").await?;
    apply(
        &admin,
        b,
        "hostile",
        ("hostile-component", "hostile.wasm"),
        json!({}),
    )
    .await?;
    status_until(
        &admin,
        (b, "hostile"),
        "team B's hostile plugin is loaded",
        |s| condition(s, "Loaded").0 == "True",
    )
    .await?;
    let attack_kind = weir_e2e::hostile::attack_kind();
    let attacks =
        Api::<DynamicObject>::namespaced_with(admin.clone(), b, &attack_kind.api_resource());
    for attack in ["requeue-now", "requeue-zero", "churn", "log-flood"] {
        let parent: DynamicObject = serde_json::from_value(json!({
            "apiVersion": attack_kind.api_version(), "kind": attack_kind.kind,
            "metadata": {"name": attack}, "spec": {"attack": attack, "target": ""},
        }))?;
        attacks.create(&PostParams::default(), &parent).await?;
    }
    let calls = || {
        ["success", "error", "refused", "gone"]
            .iter()
            .map(|r| host.metrics().reconciles_of("hostile", r))
            .sum::<u64>()
    };
    eventually("team B's flood is under way", LOAD_BUDGET, || async {
        (calls() >= 20).then_some(())
    })
    .await?;
    let started = Instant::now();
    create_blog(&admin, a, "during").await?;
    wait_ready(&blogs_in(&admin, a), "during").await?;
    let took = started.elapsed();
    println!(
        "team A's Blog converged in {took:.2?} while team B flooded ({} hostile calls)",
        calls()
    );
    assert!(
        took < FLOOD_BUDGET,
        "team A's Blog took {took:?} during team B's flood"
    );
    let text = host.metrics().encode();
    let in_flight = |ns: &str| {
        let prefix = format!("weir_tenant_reconciles_in_flight{{tenant=\"{ns}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    assert!(in_flight(b).is_some_and(|n| n <= 4.0), "{text}");
    host.shutdown().await;
    Ok(())
}
