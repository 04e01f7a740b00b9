//! Installs the CRD a plugin ships, for `weir dev` (a cluster's CRDs come from `deploy/crd/`).

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};

use crate::plugin::{PluginInfo, ResourceKind};

/// Why a plugin's CRD could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The CRD text is neither YAML nor JSON.
    #[error("plugin {plugin}: its CRD does not parse")]
    Parse {
        /// The plugin.
        plugin: String,
        /// The parser's error.
        #[source]
        source: crate::yaml::Error,
    },
    /// The API server refused the CRD.
    #[error("plugin {plugin}: installing its CRD failed")]
    Apply {
        /// The plugin.
        plugin: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The CRD does not define exactly the plugin's parent kind (checked before installing it).
    #[error(transparent)]
    Refused(#[from] crate::policy::PolicyRefusal),
    /// The kind was not served in time after the CRD was created.
    #[error("plugin {plugin}: kind {kind} not served 10 s after installing its CRD")]
    NotServed {
        /// The plugin.
        plugin: String,
        /// The parent kind.
        kind: String,
    },
}

/// Server-side applies the plugin's CRD (if it ships one) and waits until its kind is served.
/// Returns whether there was a CRD to install. A CRD that does not define exactly the
/// plugin's parent kind is refused before anything is written (it is force-applied, so it
/// could otherwise redefine someone else's kind).
pub async fn install_crd(client: &Client, info: &PluginInfo) -> Result<bool, CrdError> {
    let Some(text) = &info.crd else {
        return Ok(false);
    };
    crate::policy::check_crd(info)?;
    let crd: DynamicObject = crate::yaml::from_str(text).map_err(|source| CrdError::Parse {
        plugin: info.name.clone(),
        source,
    })?;
    let name = crd.metadata.name.clone().unwrap_or_default();
    let crds = ResourceKind {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
        namespaced: false,
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds.api_resource());
    api.patch(
        &name,
        &PatchParams::apply("weir-dev").force(),
        &Patch::Apply(&crd),
    )
    .await
    .map_err(|source| CrdError::Apply {
        plugin: info.name.clone(),
        source,
    })?;
    let parents: Api<DynamicObject> = Api::all_with(client.clone(), &info.parent.api_resource());
    for _ in 0..200 {
        if parents.list(&ListParams::default().limit(1)).await.is_ok() {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(CrdError::NotServed {
        plugin: info.name.clone(),
        kind: info.parent.kind.clone(),
    })
}
