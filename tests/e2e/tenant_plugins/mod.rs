//! Tenant plugins (`TenantPlugin`): a team's own plugin, served by the host that follows
//! Plugins, in the team's namespace only.
//!
//! `teams`: on an emulator enforcing RBAC, a team's ServiceAccount bound to
//! `weir-tenant-plugin-editor` (`deploy/rbac/tenant-plugins.yaml`) in its namespace creates a
//! TenantPlugin there and is forbidden elsewhere; two teams serve the Blog kind with different
//! versions, each in its own namespace; a Blog elsewhere is left alone and a TenantPlugin there
//! is refused as no tenant's; team A's candidate is rolled out beside its serving version, and
//! once aborted its TenantPlugin's `CandidateLoaded` says so (version, digest, why); each
//! team's share is on /metrics; while team B's plugin floods
//! (requeues at once, churns its children), team A's next Blog converges within the hostile
//! suite's budget.
//!
//! `capped`: a tenant filling its namespace past its `maxCachedObjects` is cached no further
//! than the cap, its reconciles that would read what was left out are held back (`CacheLimited`
//! on the parent) with nothing pruned, its TenantPlugin says `CacheLimited=True` (`AtCap`), the
//! other tenant's Blog converges meanwhile, and once the objects are deleted everything left out
//! is cached and converges, and the TenantPlugin says `CacheLimited=False` (`WithinCap`).
//!
//! `hostile`: a kind not granted, a cluster-scoped child, a widened grant and a pull Secret of
//! another namespace are refused in the TenantPlugin's status; the hostile plugin served as a
//! tenant's writes nothing into another namespace, and a tenant's plugin reading another
//! namespace's ConfigMap is refused.

mod capped;
mod hostile;
mod teams;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use weir::cluster::{PluginStatus, TenantPluginResource};
use weir::manager::Manager;
use weir::policy::{Grant, GroupKind, Policy};
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, own_engine, plugin, wait_ready};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

pub(super) use weir_e2e::tenants::{apply, component, install_tenant_plugin_crd, tenants};

use crate::plugin_resource::through_the_host::{condition, install_plugin_crd};

/// How long a component may take to compile and be admitted: on a fresh machine the
/// precompiled cache is empty, and the other tests compile beside it.
pub(super) const LOAD_BUDGET: Duration = Duration::from_secs(120);

/// How long another tenant's Blog may take to converge while a tenant floods (the hostile
/// suite's budget for the Blog beside the attacks).
pub(super) const FLOOD_BUDGET: Duration = Duration::from_secs(10);

/// A namespace.
pub(super) async fn namespace(client: &Client, name: &str) -> Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// The test's own emulator (enforcing RBAC when `secure`; Deployments turn ready after
/// 100 ms) with the teams' `namespaces`, the Blog, Plugin and TenantPlugin CRDs installed; the
/// environment is the first namespace's.
pub(super) async fn emulated_teams(secure: bool, namespaces: &[&str]) -> Result<TestEnv> {
    let emulator = Emulator::start(EmulatorConfig {
        secure,
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(100),
        }),
        ..EmulatorConfig::default()
    })
    .await?;
    let admin = emulator.client();
    for ns in namespaces {
        namespace(&admin, ns).await?;
    }
    let first = namespaces.first().context("no team's namespace")?;
    let env = TestEnv {
        client: admin.clone(),
        emulator: Some(emulator),
        namespace: (*first).to_owned(),
    };
    env.install_crd(&plugin("blog")?).await?;
    install_plugin_crd(&env).await?;
    install_tenant_plugin_crd(&admin).await?;
    Ok(env)
}

/// Waits until TenantPlugin `ns/name`'s status satisfies `ok` (for up to [`LOAD_BUDGET`]), and
/// returns it.
pub(super) async fn status_until(
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
pub(super) async fn refused(
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

pub(super) fn blogs_in(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &kinds::blog().api_resource())
}

pub(super) async fn create_blog(client: &Client, ns: &str, name: &str) -> Result<()> {
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
pub(super) async fn host(
    env: &TestEnv,
    store: &Path,
    policy: Policy,
    one: bool,
) -> Result<Manager> {
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
