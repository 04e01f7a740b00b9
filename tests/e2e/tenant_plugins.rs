//! Tenant plugins (`TenantPlugin`): a team's own plugin, served by the host that follows
//! Plugins, in the team's namespace only. On an emulator enforcing RBAC, a team's
//! ServiceAccount bound to `weir-tenant-plugin-editor` (`deploy/rbac/tenant-plugins.yaml`) in
//! its namespace creates a TenantPlugin there and is forbidden elsewhere; two teams serve the
//! Blog kind with different versions, each in its own namespace, and a Blog elsewhere is left
//! alone (its TenantPlugin refused as no tenant's), and each team's share is on /metrics; while team B's plugin floods (requeues at once,
//! churns its children), team A's next Blog converges within the hostile suite's budget. Then the hostile cases: a kind not granted, a cluster-scoped child, a widened grant
//! and a pull Secret of another namespace are refused in the TenantPlugin's status; the
//! hostile plugin served as a tenant's writes nothing into another namespace, and a tenant's
//! plugin reading another namespace's ConfigMap is refused.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, CustomResourceExt, ResourceExt};
use serde_json::{Value, json};
use weir::cluster::{PluginStatus, TenantPluginResource};
use weir::manager::Manager;
use weir::policy::{Grant, GroupKind, Policy, Tenant};
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, built, eventually, kinds, own_engine, plugin, wait_ready};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use crate::plugin_resource::through_the_host::{condition, install_plugin_crd};

/// How long a component may take to compile and be admitted: on a fresh machine the
/// precompiled cache is empty, and the other tests compile beside it.
const LOAD_BUDGET: Duration = Duration::from_secs(120);

/// How long another tenant's Blog may take to converge while a tenant floods (the hostile
/// suite's budget for the Blog beside the attacks).
const FLOOD_BUDGET: Duration = Duration::from_secs(10);

/// A namespace.
async fn namespace(client: &Client, name: &str) -> Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// Installs the TenantPlugin CRD (as `deploy/crd/tenantplugin.yaml` does) and waits until it is served.
async fn install_tenant_plugin_crd(client: &Client) -> Result<()> {
    let crd = TenantPluginResource::crd();
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            &crd.name_any(),
            &PatchParams::apply("weir-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .context("installing the TenantPlugin CRD")?;
    let all = Api::<TenantPluginResource>::all(client.clone());
    eventually("TenantPlugins are served", CONVERGE, || async {
        all.list(&ListParams::default()).await.ok()
    })
    .await?;
    Ok(())
}

/// The component `file` (from `target/plugins`) in ConfigMap `name` of `ns`, under key `file`.
async fn component(client: &Client, ns: &str, name: &str, file: &str) -> Result<()> {
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        binary_data: Some([(file.into(), ByteString(std::fs::read(built(file))?))].into()),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .with_context(|| format!("creating the component ConfigMap {ns}/{name}"))?;
    Ok(())
}

/// `kubectl apply -n ns` of a TenantPlugin serving `file` from ConfigMap `cm` of `ns`, as
/// `client`; `extra` is merged into its spec.
async fn apply(
    client: &Client,
    ns: &str,
    name: &str,
    (cm, file): (&str, &str),
    extra: Value,
) -> Result<()> {
    let mut spec = json!({"source": {"configMap": {"namespace": ns, "name": cm, "key": file}}});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    let object = json!({
        "apiVersion": "weir.dev/v1alpha1", "kind": "TenantPlugin",
        "metadata": {"name": name, "namespace": ns}, "spec": spec,
    });
    Api::<TenantPluginResource>::namespaced(client.clone(), ns)
        .patch(
            name,
            &PatchParams::apply("team").force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("applying TenantPlugin {ns}/{name}"))?;
    Ok(())
}

/// Waits until TenantPlugin `ns/name`'s status satisfies `ok` (for up to [`LOAD_BUDGET`]), and
/// returns it.
async fn status_until(
    client: &Client,
    (ns, name): (&str, &str),
    what: &str,
    ok: impl Fn(&PluginStatus) -> bool,
) -> Result<PluginStatus> {
    let api = Api::<TenantPluginResource>::namespaced(client.clone(), ns);
    let found = eventually(what, LOAD_BUDGET, || async {
        let status = api.get(name).await.ok()?.status?;
        ok(&status).then_some(status)
    })
    .await;
    if found.is_err() {
        let last = api.get(name).await.map(|p| p.status);
        return found.with_context(|| format!("TenantPlugin {ns}/{name} has {last:?}"));
    }
    found
}

/// Waits until TenantPlugin `ns/name` is refused with `reason`, its message containing `needle`.
async fn refused(
    client: &Client,
    (ns, name): (&str, &str),
    reason: &str,
    needle: &str,
) -> Result<()> {
    let what = format!("TenantPlugin {ns}/{name} is refused with {reason}");
    let status = status_until(client, (ns, name), &what, |s| {
        condition(s, "Loaded").1 == reason
    })
    .await?;
    let message = status.last_error.unwrap_or_default();
    if !message.contains(needle) {
        bail!(
            "TenantPlugin {ns}/{name}: {reason}, but the message says {message:?}, not {needle:?}"
        );
    }
    println!("{ns}/{name}: Loaded=False {reason}: {message}");
    Ok(())
}

fn blogs_in(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &kinds::blog().api_resource())
}

async fn create_blog(client: &Client, ns: &str, name: &str) -> Result<()> {
    let blog: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"title": name, "replicas": 1},
    }))?;
    blogs_in(client, ns)
        .create(&PostParams::default(), &blog)
        .await
        .with_context(|| format!("creating Blog {ns}/{name}"))?;
    Ok(())
}

/// The host following Plugins and TenantPlugins under `policy`, storing components in `store`;
/// watching every namespace, or only the test's (as the scenarios' hosts do) when `one`.
async fn host(env: &TestEnv, store: &Path, policy: Policy, one: bool) -> Result<Manager> {
    env.in_process(RunSource::Cluster(store.into()))
        .engine(own_engine()?)
        .config(move |c| {
            c.policy = Arc::new(policy);
            if !one {
                c.controller.namespace = None;
            }
        })
        .start()
        .await
}

/// `tenants:` giving each of `namespaces` the kinds `kinds` (`(group, kind)`).
fn tenants(policy: &mut Policy, namespaces: &[&str], kinds: &[(&str, &str)]) {
    for ns in namespaces {
        let tenant = Tenant {
            kinds: kinds.iter().map(|(g, k)| GroupKind::new(g, k)).collect(),
            ..Tenant::default()
        };
        policy.tenants.insert((*ns).to_owned(), tenant);
    }
}

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
    let emulator = Emulator::start(EmulatorConfig {
        secure: true,
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(100),
        }),
        ..EmulatorConfig::default()
    })
    .await?;
    let admin = emulator.client();
    let (a, b, elsewhere) = ("team-a", "team-b", "elsewhere");
    for ns in [a, b, elsewhere] {
        namespace(&admin, ns).await?;
    }
    let env = TestEnv {
        client: admin.clone(),
        emulator: Some(emulator),
        namespace: a.to_owned(),
    };
    env.install_crd(&plugin("blog")?).await?;
    install_plugin_crd(&env).await?;
    install_tenant_plugin_crd(&admin).await?;
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
