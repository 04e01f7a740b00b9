//! Tenant plugins for the scenarios and the bench: the resource CRDs installed, a component in
//! a ConfigMap, a `TenantPlugin` applied, the policy's `tenants:` entries.

use anyhow::{Context, Result};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, CustomResourceExt, Resource, ResourceExt};
use serde_json::{Value, json};
use weir::cluster::{PluginResource, TenantPluginResource};
use weir::policy::{GroupKind, Policy, Tenant};

use crate::{CONVERGE, built, eventually};

/// Installs the CRD of `K` (as `deploy/crd/` does) and waits until its objects are served in
/// every namespace.
async fn install_resource_crd<K>(client: &Client) -> Result<Api<K>>
where
    K: CustomResourceExt
        + Resource<DynamicType = ()>
        + Clone
        + for<'de> k8s_openapi::serde::Deserialize<'de>
        + std::fmt::Debug,
{
    let crd = K::crd();
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            &crd.name_any(),
            &PatchParams::apply("weir-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("installing the {} CRD", K::kind(&())))?;
    let all = Api::<K>::all(client.clone());
    eventually(
        &format!("{}s are served", K::kind(&())),
        CONVERGE,
        || async { all.list(&ListParams::default()).await.ok() },
    )
    .await?;
    Ok(all)
}

/// Installs the Plugin CRD and waits until Plugins are served.
pub async fn install_plugin_crd(client: &Client) -> Result<Api<PluginResource>> {
    install_resource_crd::<PluginResource>(client).await
}

/// Installs the TenantPlugin CRD and waits until TenantPlugins are served.
pub async fn install_tenant_plugin_crd(client: &Client) -> Result<()> {
    install_resource_crd::<TenantPluginResource>(client).await?;
    Ok(())
}

/// The component `file` (from `target/plugins`) in ConfigMap `name` of `ns`, under key `file`.
pub async fn component(client: &Client, ns: &str, name: &str, file: &str) -> Result<()> {
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
pub async fn apply(
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

/// `tenants:` giving each of `namespaces` the kinds `kinds` (`(group, kind)`).
pub fn tenants(policy: &mut Policy, namespaces: &[&str], kinds: &[(&str, &str)]) {
    for ns in namespaces {
        let tenant = Tenant {
            kinds: kinds.iter().map(|(g, k)| GroupKind::new(g, k)).collect(),
            ..Tenant::default()
        };
        policy.tenants.insert((*ns).to_owned(), tenant);
    }
}
