//! The evidence for the `Attack` parents, one arm per `spec.attack`.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::ListParams;
use serde_json::Value;
use weir_e2e::controlled_by;

use super::checks::{
    CALLS_PER_SECOND, MAX_CONDITION_MESSAGE, MAX_EVENT_NOTE, TOKEN, USER_PASSWORD_B64, Verdict,
    World, answered, call_failed, config_maps, failed, no_config_map, parent, refused,
    refused_clean, short,
};

/// The sha annotation the redacted Secret carries.
pub const DATA_SHA: &str = "weir.dev/data-sha256";
/// Most deletions of churned ConfigMaps per second in the quiet window.
const CHURN_PER_SECOND: usize = 2;

fn secs(world: &World<'_>) -> u64 {
    world.window.as_secs().max(1)
}

/// The hot-loop guard caught it, and the plugin's calls stayed under the bound.
async fn throttled(world: &World<'_>, name: &str) -> Verdict {
    let evidence = refused(world, name, "HotLoop", "throttled").await?;
    calls_bounded(world)?;
    Ok(format!("{evidence}; {}", calls_line(world)))
}

fn calls_line(world: &World<'_>) -> String {
    format!(
        "{} hostile calls in {:?} (bound {})",
        world.calls_in_window,
        world.window,
        CALLS_PER_SECOND * secs(world)
    )
}

fn calls_bounded(world: &World<'_>) -> Result<(), String> {
    if world.calls_in_window > CALLS_PER_SECOND * secs(world) {
        return Err(calls_line(world));
    }
    Ok(())
}

/// Nothing the test can see holds a secret: no ConfigMap, no parent status.
async fn nothing_leaked(world: &World<'_>) -> Result<(), String> {
    let needles = [USER_PASSWORD_B64, "hunter2", TOKEN, "stolen-token"];
    for cm in config_maps(world).await? {
        let text = serde_json::to_string(&cm.data).unwrap_or_default();
        if let Some(n) = needles.iter().find(|n| text.contains(*n)) {
            return Err(format!("ConfigMap {} holds {n}", cm.name_any()));
        }
    }
    let parents = world
        .env
        .api(&weir_e2e::hostile::attack_kind())
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?;
    for p in parents.items {
        let text = p.data["status"].to_string();
        if let Some(n) = needles.iter().find(|n| text.contains(*n)) {
            return Err(format!("the status of {} holds {n}", p.name_any()));
        }
    }
    Ok(())
}

/// `status.probe`'s every outcome is an error.
fn all_failed(status: &Value) -> Result<String, String> {
    let probe = status["probe"]
        .as_object()
        .ok_or("no probe in the status")?;
    let reached: Vec<&String> = probe
        .iter()
        .filter(|(_, v)| v.get("error").is_none())
        .map(|(k, _)| k)
        .collect();
    if !reached.is_empty() {
        return Err(format!("reached {reached:?}: {status}"));
    }
    Ok(format!(
        "every attempt failed: {}",
        short(&status["probe"].to_string())
    ))
}

/// The evidence for the parent `name` running `attack`.
pub async fn check(world: &World<'_>, name: &str, attack: &str) -> Verdict {
    match attack {
        "sleep" | "spin" => call_failed(world, name, "did not answer within").await,
        "memory" => call_failed(world, name, "memory").await,
        "trap" => call_failed(world, name, "trap").await,
        "invalid-json" => call_failed(world, name, "").await,
        "huge-answer" => call_failed(world, name, "limit").await,
        "huge-status" => refused_clean(world, name, "desired status").await,
        "child-finalizers" => refused_clean(world, name, "finalizers").await,
        "duplicate" => refused_clean(world, name, "appears twice").await,
        "invalid-name" => refused_clean(world, name, "invalid name").await,
        "many" => refused_clean(world, name, "256").await,
        "requeue-zero" | "requeue-now" => throttled(world, name).await,
        "churn" => {
            let evidence = throttled(world, name).await?;
            let deletes = world.churn_deletes_in_window.unwrap_or(0);
            if deletes > CHURN_PER_SECOND * secs(world) as usize {
                return Err(format!(
                    "{deletes} churned ConfigMaps deleted in the window"
                ));
            }
            Ok(format!(
                "{evidence}; {deletes} churned ConfigMaps deleted in the window"
            ))
        }
        "finalize-zero" => {
            let p = parent(world, name).await?;
            if p.metadata.deletion_timestamp.is_none() {
                return Err("not being deleted".into());
            }
            calls_bounded(world)?;
            Ok(format!(
                "still finalizing, as the plugin asks; {}",
                calls_line(world)
            ))
        }
        "token-secret" => {
            let evidence = refused(world, name, "Refused", "service-account-token").await?;
            let secrets = world
                .env
                .typed::<Secret>()
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            if let Some(s) = secrets
                .items
                .iter()
                .find(|s| s.type_.as_deref() == Some("kubernetes.io/service-account-token"))
            {
                return Err(format!("a token Secret {} exists", s.name_any()));
            }
            Ok(format!("{evidence}; no token Secret exists"))
        }
        "read-secret" => read_secret(world, name).await,
        "user-secret" => {
            let evidence = refused(world, name, "Refused", "user-credentials").await?;
            let secret = world
                .env
                .typed::<Secret>()
                .get("user-credentials")
                .await
                .map_err(|e| e.to_string())?;
            let password = secret
                .data
                .as_ref()
                .and_then(|d| d.get("password"))
                .map(|b| b.0.clone());
            if password.as_deref() != Some(b"hunter2".as_slice()) {
                return Err("the user's Secret was changed".into());
            }
            if secret.metadata.owner_references.is_some() {
                return Err("the user's Secret was adopted".into());
            }
            Ok(format!("{evidence}; the user's Secret is unchanged"))
        }
        "adopt" => {
            let evidence = refused(world, name, "Refused", "foreign").await?;
            let foreign = world
                .env
                .typed::<ConfigMap>()
                .get("foreign")
                .await
                .map_err(|e| e.to_string())?;
            let mine = foreign.data.as_ref().and_then(|d| d.get("mine"));
            if mine.map(String::as_str) != Some("yes")
                || foreign.metadata.owner_references.is_some()
            {
                return Err(format!("the foreign ConfigMap changed: {:?}", foreign.data));
            }
            Ok(format!("{evidence}; the foreign ConfigMap is unchanged"))
        }
        "elsewhere" => {
            let evidence = refused(world, name, "Refused", world.other).await?;
            let there = kube::Api::<ConfigMap>::namespaced(world.env.client.clone(), world.other)
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            if let Some(cm) = there.items.iter().find(|c| c.name_any() == name) {
                return Err(format!("{} was written in {}", cm.name_any(), world.other));
            }
            Ok(format!("{evidence}; nothing in {}", world.other))
        }
        "huge-error" => {
            let (reason, message) = failed(world, name).await?;
            let events = world
                .env
                .typed::<Event>()
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let longest = events
                .items
                .iter()
                .filter_map(|e| e.note.as_ref())
                .map(String::len)
                .max()
                .unwrap_or(0);
            let about = events
                .items
                .iter()
                .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
                .count();
            if longest > MAX_EVENT_NOTE || about == 0 {
                return Err(format!("{about} Events, longest note {longest} bytes"));
            }
            Ok(format!(
                "Reconciled=False {reason}, message {} bytes (≤ {MAX_CONDITION_MESSAGE}); {about} Event(s), every note in the namespace ≤ {MAX_EVENT_NOTE} bytes (longest {longest})",
                message.len()
            ))
        }
        "conditions-flood" => {
            let status = answered(world, name).await?;
            let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
            let longest = conditions
                .iter()
                .filter_map(|c| c["message"].as_str())
                .map(str::len)
                .max()
                .unwrap_or(0);
            if longest > MAX_CONDITION_MESSAGE {
                return Err(format!("a {longest}-byte condition message"));
            }
            Ok(format!(
                "{} conditions, longest message {longest} bytes (≤ {MAX_CONDITION_MESSAGE})",
                conditions.len()
            ))
        }
        "forge-owner" => {
            let p = parent(world, name).await?;
            let cm = world
                .env
                .api(&weir_e2e::kinds::config_map())
                .get(name)
                .await
                .map_err(|e| format!("its ConfigMap: {e}"))?;
            let owners = cm.owner_references().len();
            let label = cm.labels().get("weir.dev/parent-uid").cloned();
            if !controlled_by(&cm, &p) || owners != 1 || label != p.metadata.uid {
                return Err(format!("{owners} owners, parent-uid label {label:?}"));
            }
            Ok("the host's owner reference and label replaced the forged ones".into())
        }
        "env" => {
            let status = answered(world, name).await?;
            let probe = &status["probe"];
            let vars = probe["vars"].as_array().map_or(0, Vec::len);
            let args = probe["args"].as_array().map_or(0, Vec::len);
            if vars > 0 || args > 1 {
                return Err(format!("it saw {probe}"));
            }
            Ok(format!("{vars} environment variables, {args} arguments"))
        }
        "fs" | "net" => all_failed(&answered(world, name).await?),
        "stdio" => super::logs::stdio(&answered(world, name).await?),
        "log-flood" => {
            answered(world, name).await?;
            no_config_map(world, "Not_A_Name").await?;
            super::logs::flood()
        }
        "log-forge" => {
            answered(world, name).await?;
            no_config_map(world, "Not_A_Name").await?;
            super::logs::forge()
        }
        other => Err(format!("no check for {other}")),
    }
}

/// The Secret's data never reaches the plugin: what it publishes holds no data, only the hash.
async fn read_secret(world: &World<'_>, name: &str) -> Verdict {
    let vault = world
        .env
        .typed::<Secret>()
        .get(&format!("{name}-vault"))
        .await
        .map_err(|e| format!("its Secret: {e}"))?;
    let filled = vault.data.as_ref().is_some_and(|d| d.contains_key("token"));
    if !filled {
        return Err("the token is not filled in yet".into());
    }
    let status = answered(world, name).await?;
    let seen = status["seen"].as_array().cloned().unwrap_or_default();
    let Some(secret) = seen.first() else {
        return Err("it has not observed its Secret yet".into());
    };
    if !secret["data"].is_null() || !secret["stringData"].is_null() {
        return Err(format!("it observed the data: {secret}"));
    }
    let sha = secret["annotations"][DATA_SHA].as_str().unwrap_or_default();
    let before = world.sha_before_fill.lock().ok().and_then(|b| b.clone());
    if before.as_deref() == Some(sha) {
        return Err("it has not observed the filled Secret yet".into());
    }
    let leak = world
        .env
        .typed::<ConfigMap>()
        .get(&format!("{name}-leak"))
        .await
        .map_err(|e| format!("its leak ConfigMap: {e}"))?;
    let published = leak
        .data
        .as_ref()
        .and_then(|d| d.get("seen"))
        .cloned()
        .unwrap_or_default();
    if !published.contains(sha) || sha.is_empty() {
        return Err(format!("the leak ConfigMap shows {published}"));
    }
    nothing_leaked(world).await?;
    Ok(format!(
        "observed its Secret without data ({DATA_SHA} {}…); no ConfigMap or status holds the token or the user's password",
        &sha[..sha.len().min(12)]
    ))
}
