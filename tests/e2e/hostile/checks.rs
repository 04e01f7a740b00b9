//! The evidence that each attack is contained, read from the API server (and, where an attack
//! is about the host itself, from the host's catalog, readiness and call counters).

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use weir::manager::Manager;
use weir::plugin::PluginInfo;
use weir::policy::Policy;
use weir_e2e::{TestEnv, condition, controlled_by, kinds, wait_ready};

pub use weir_e2e::hostile::USER_PASSWORD_B64;
/// What the "token controller" (this test) writes into the `read-secret` attack's Secret.
pub(super) const TOKEN: &str = "c3RvbGVuLXRva2VuLTQyCg==";
/// Kubernetes' caps on a condition message and an Event note.
pub(super) const MAX_CONDITION_MESSAGE: usize = 32_768;
pub(super) const MAX_EVENT_NOTE: usize = 1_024;
/// Hostile calls allowed in the quiet window per second: four throttled loops, six stuck
/// guests on backoff and the rest settled (unthrottled, one loop alone made 1,600 a second).
pub(super) const CALLS_PER_SECOND: u64 = 30;

/// One attack: a parent of the `hostile` plugin, or a variant component.
pub enum Attack {
    /// A variant whose attack is its `describe()`.
    Variant(&'static str),
    /// An `Attack` parent.
    Parent {
        /// Its name.
        name: String,
        /// Its `spec.attack`.
        attack: &'static str,
    },
}

impl fmt::Display for Attack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attack::Variant(v) => write!(f, "{:<18} (component hostile-{v})", v),
            Attack::Parent { name, .. } => write!(f, "{name:<18}"),
        }
    }
}

/// What the checks look at.
pub struct World<'a> {
    /// The test's cluster and namespace.
    pub env: &'a TestEnv,
    /// The host under attack.
    pub host: &'a Manager,
    /// The namespace the `elsewhere` attack aims at.
    pub other: &'a str,
    /// The quiet window calls were counted over.
    pub window: Duration,
    /// The hostile plugin's calls in that window.
    pub calls_in_window: u64,
    /// Deletions of the churn attack's ConfigMaps in that window (emulator only).
    pub churn_deletes_in_window: Option<usize>,
    /// The data hash the `read-secret` attack had observed before the token was filled in.
    pub sha_before_fill: std::sync::Mutex<Option<String>>,
}

pub(super) type Verdict = Result<String, String>;

/// Waits until `name` is Ready with its three children; returns how many it has.
pub async fn blog_converged(env: &TestEnv, name: &str, within: Duration) -> anyhow::Result<usize> {
    let blog = tokio::time::timeout(within, wait_ready(&env.api(&kinds::blog()), name)).await??;
    let mut children = 0;
    for kind in [kinds::config_map(), kinds::deployment(), kinds::service()] {
        let list = env.api(&kind).list(&ListParams::default()).await?;
        children += list
            .items
            .iter()
            .filter(|c| controlled_by(c, &blog))
            .count();
    }
    Ok(children)
}

/// DELETE requests the emulator served for the churn attack's ConfigMaps so far.
pub fn churn_deletes(env: &TestEnv) -> Option<usize> {
    let requests = env.emulator.as_ref()?.requests();
    Some(
        requests
            .iter()
            .filter(|r| r.method == "DELETE" && r.path.contains("/configmaps/churn-churn-"))
            .count(),
    )
}

/// Polls every attack's check until all pass or `budget` runs out; the last verdict of each.
pub async fn judge(world: &World<'_>, attacks: &[Attack], budget: Duration) -> Vec<Verdict> {
    let deadline = tokio::time::Instant::now() + budget;
    let mut verdicts: Vec<Verdict> = attacks.iter().map(|_| Err("not judged".into())).collect();
    let mut read_secret_filled = false;
    loop {
        if !read_secret_filled {
            read_secret_filled = fill_token(world).await;
        }
        for (attack, verdict) in attacks.iter().zip(verdicts.iter_mut()) {
            if verdict.is_err() {
                *verdict = check(world, attack).await;
            }
        }
        if verdicts.iter().all(Result::is_ok) || tokio::time::Instant::now() > deadline {
            return verdicts;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Plays the token controller: writes a token into the `read-secret` attack's Secret, once the
/// plugin has observed it (remembering the data hash it observed then).
async fn fill_token(world: &World<'_>) -> bool {
    let Ok(p) = parent(world, "read-secret").await else {
        return false;
    };
    let Some(sha) = p.data["status"]["seen"][0]["annotations"][super::parents::DATA_SHA].as_str()
    else {
        return false;
    };
    if let Ok(mut before) = world.sha_before_fill.lock() {
        *before = Some(sha.to_owned());
    }
    let env = world.env;
    let patch = json!({"data": {"token": TOKEN}});
    let pp = PatchParams {
        field_manager: Some("token-controller".into()),
        ..PatchParams::default()
    };
    env.typed::<Secret>()
        .patch("read-secret-vault", &pp, &Patch::Merge(&patch))
        .await
        .is_ok()
}

pub(super) async fn parent(world: &World<'_>, name: &str) -> Result<DynamicObject, String> {
    let kind = weir_e2e::hostile::attack_kind();
    world
        .env
        .api(&kind)
        .get(name)
        .await
        .map_err(|e| format!("cannot read the parent: {e}"))
}

/// The `Reconciled` condition of `name` once it is False: (reason, message).
pub(super) async fn failed(world: &World<'_>, name: &str) -> Result<(String, String), String> {
    let p = parent(world, name).await?;
    let c = condition(&p, "Reconciled").ok_or("no Reconciled condition yet")?;
    if c["status"] != "False" {
        return Err(format!("Reconciled is {}", c["status"]));
    }
    let message = c["message"].as_str().unwrap_or_default().to_owned();
    if message.len() > MAX_CONDITION_MESSAGE {
        return Err(format!("a {}-byte condition message", message.len()));
    }
    Ok((c["reason"].as_str().unwrap_or_default().to_owned(), message))
}

/// `name`'s condition is False with `reason` and a message containing `needle`.
pub(super) async fn refused(world: &World<'_>, name: &str, reason: &str, needle: &str) -> Verdict {
    let (got, message) = failed(world, name).await?;
    if got != reason || !message.contains(needle) {
        return Err(format!("Reconciled=False {got}: {}", short(&message)));
    }
    Ok(format!("Reconciled=False {got}: {}", short(&message)))
}

pub(super) fn short(text: &str) -> String {
    let cut: String = text.chars().take(110).collect();
    if cut.len() < text.len() {
        format!("{cut}… ({} bytes)", text.len())
    } else {
        cut
    }
}

pub(super) async fn config_maps(world: &World<'_>) -> Result<Vec<ConfigMap>, String> {
    world
        .env
        .typed::<ConfigMap>()
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|e| e.to_string())
}

pub(super) async fn no_config_map(world: &World<'_>, prefix: &str) -> Result<(), String> {
    let found = config_maps(world)
        .await?
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with(prefix))
        .count();
    match found {
        0 => Ok(()),
        n => Err(format!("{n} ConfigMap(s) {prefix}* were written")),
    }
}

/// A refusal that wrote nothing named `name*`.
pub(super) async fn refused_clean(world: &World<'_>, name: &str, needle: &str) -> Verdict {
    let evidence = refused(world, name, "Refused", needle).await?;
    no_config_map(world, name).await?;
    Ok(format!("{evidence}; nothing written"))
}

/// A failed call (timeout, trap, memory, invalid answer) that wrote nothing.
pub(super) async fn call_failed(world: &World<'_>, name: &str, needle: &str) -> Verdict {
    let (reason, message) = failed(world, name).await?;
    if !message.contains(needle) {
        return Err(format!("Reconciled=False {reason}: {}", short(&message)));
    }
    no_config_map(world, name).await?;
    Ok(format!("Reconciled=False {reason}: {}", short(&message)))
}

/// The call finished and its answer was applied: Reconciled=True, status written.
pub(super) async fn answered(world: &World<'_>, name: &str) -> Result<Value, String> {
    let p = parent(world, name).await?;
    let c = condition(&p, "Reconciled").ok_or("no Reconciled condition yet")?;
    if c["status"] != "True" {
        return Err(format!("Reconciled is {}: {}", c["status"], c["message"]));
    }
    Ok(p.data["status"].clone())
}

async fn check(world: &World<'_>, attack: &Attack) -> Verdict {
    match attack {
        Attack::Variant(v) => variant(world, v).await,
        Attack::Parent { name, attack } => super::parents::check(world, name, attack).await,
    }
}

fn served(world: &World<'_>, name: &str) -> bool {
    world.host.catalog().rows().iter().any(|r| r.name == name)
}

async fn variant(world: &World<'_>, variant: &str) -> Verdict {
    let name = format!("hostile-{variant}");
    if variant == "unserved" {
        // Admitted (its CRD would be installed by a deployment), but its kind is not served:
        // only its own readiness fails.
        if !served(world, &name) {
            return Err("not loaded".into());
        }
        if !world.host.is_ready() {
            return Err("the host is not ready".into());
        }
        return Ok("loaded, its kind unserved; the host stays ready and the Blog converged".into());
    }
    if served(world, &name) {
        return Err("loaded and served".into());
    }
    // The Attack plugin's Secret children are watched anyway; nothing else a variant claims.
    let watched = world.host.watched();
    if let Some((k, _)) = watched.iter().find(|(k, _)| {
        matches!(
            k.kind.as_str(),
            "Namespace" | "CustomResourceDefinition" | "*" | "Squat"
        )
    }) {
        return Err(format!("the host watches {}", k.kind));
    }
    let info = weir_e2e::plugin(&name)
        .map_err(|e| e.to_string())?
        .info()
        .clone();
    let rbac = rbac_of(&info)?;
    let mut evidence = format!("refused by admission, not served; weir rbac: {rbac}");
    match variant {
        "parent-secret" => {
            let secret = world
                .env
                .typed::<Secret>()
                .get("user-credentials")
                .await
                .map_err(|e| e.to_string())?;
            let finalizers = secret.metadata.finalizers.unwrap_or_default();
            if !finalizers.is_empty() {
                return Err(format!("the user's Secret has finalizers {finalizers:?}"));
            }
            evidence.push_str("; the user's Secret has no finalizer");
        }
        "crd-other" => {
            let crds = kube::Api::<DynamicObject>::all_with(
                world.env.client.clone(),
                &weir::plugin::ResourceKind {
                    group: "apiextensions.k8s.io".into(),
                    version: "v1".into(),
                    kind: "CustomResourceDefinition".into(),
                    plural: "customresourcedefinitions".into(),
                    namespaced: false,
                }
                .api_resource(),
            );
            let blog = crds
                .get("blogs.weir.dev")
                .await
                .map_err(|e| e.to_string())?;
            if blog.data["spec"]["names"]["kind"] != "Blog" {
                return Err("the Blog CRD was redefined".into());
            }
            if crds
                .get_opt("squats.test.weir.dev")
                .await
                .ok()
                .flatten()
                .is_some()
            {
                return Err("its CRD squats.test.weir.dev was installed".into());
            }
            evidence.push_str("; the Blog CRD is untouched");
        }
        _ => {}
    }
    Ok(evidence)
}

/// What `weir rbac` (default policy, refused plugins skipped) grants for `info`: nothing
/// beyond the Events every host records, and one refusal comment.
fn rbac_of(info: &PluginInfo) -> Result<String, String> {
    let rendered =
        weir::rbac::role_for("weir", std::slice::from_ref(info), &Policy::default(), true)
            .map_err(|e| e.to_string())?;
    // The ClusterRole itself, without the comments that quote the refusal.
    let yaml: String = rendered
        .yaml
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    if !yaml.contains("events") {
        return Err(format!("no ClusterRole printed: {yaml}"));
    }
    for claimed in [
        "- secrets",
        "namespaces",
        "customresourcedefinitions",
        "'*'",
        "\"*\"",
        "squats",
    ] {
        if yaml.contains(claimed) {
            return Err(format!("weir rbac grants {claimed}: {yaml}"));
        }
    }
    if !rendered
        .warnings
        .iter()
        .any(|w| w.starts_with("refused, nothing granted"))
    {
        return Err(format!(
            "weir rbac does not say it refused the plugin: {yaml}"
        ));
    }
    Ok("refused, nothing granted".into())
}
