//! What the parent's status should read: the plugin's fields, `observedGeneration` and the host's `Reconciled` condition, and the patch from what it reads now.
//!
//! The plugin owns its status fields and the `Ready` condition; the host owns
//! `observedGeneration` and the `Reconciled` condition. Nothing is patched when the
//! status already reads as desired, so a converged parent costs no write.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Map, Value, json};

/// The host's `Reconciled` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciled {
    /// Whether the last reconcile succeeded.
    pub ok: bool,
    /// CamelCase reason (`Reconciled`, `TransientError`, `PermanentError`, `Refused`, `HotLoop`...).
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
}

impl Reconciled {
    /// The last reconcile converged the children.
    pub fn ok() -> Self {
        Self {
            ok: true,
            reason: "Reconciled".into(),
            message: "children are as desired".into(),
        }
    }

    /// The last reconcile failed for `reason`.
    pub fn failed(reason: &str, message: impl Into<String>) -> Self {
        Self {
            ok: false,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Bytes Kubernetes accepts in a condition message.
const MAX_CONDITION_MESSAGE: usize = 32_768;
/// Bytes Kubernetes accepts in a condition reason.
const MAX_CONDITION_REASON: usize = 1_024;

fn condition_status(ok: bool) -> &'static str {
    if ok { "True" } else { "False" }
}

/// The status the parent should show. `plugin` is the plugin's status (`None` keeps the live
/// one, e.g. after a failed call); `lastTransitionTime` moves only when a condition's status does.
pub fn desired_status(
    live: Option<&Value>,
    plugin: Option<Value>,
    generation: Option<i64>,
    reconciled: &Reconciled,
    now: &str,
) -> Value {
    let live_obj = live.and_then(Value::as_object);
    let kept_plugin_status = plugin.is_none();
    let mut status: Map<String, Value> = match plugin {
        Some(Value::Object(m)) => m,
        Some(_) | None => live_obj.cloned().unwrap_or_default(),
    };
    if !kept_plugin_status && let Some(g) = generation {
        status.insert("observedGeneration".into(), json!(g));
    }
    // One condition per type (a later one of the same type replaces an earlier one, as
    // `meta.SetStatusCondition` does): with two, neither's `lastTransitionTime` would hold and
    // every reconcile would patch the status again.
    let type_of = |c: &Value| c.get("type").and_then(Value::as_str).map(str::to_owned);
    let mut conditions: Vec<Value> = Vec::new();
    for c in status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(ty) = type_of(c).filter(|t| t != "Reconciled") else {
            continue;
        };
        match conditions
            .iter_mut()
            .find(|earlier| type_of(earlier).as_deref() == Some(ty.as_str()))
        {
            Some(earlier) => *earlier = c.clone(),
            None => conditions.push(c.clone()),
        }
    }
    conditions.push(json!({
        "type": "Reconciled",
        "status": condition_status(reconciled.ok),
        "reason": reconciled.reason,
        "message": crate::plugin::truncate(&reconciled.message, MAX_CONDITION_MESSAGE),
    }));
    let live_conditions = live_obj
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array);
    for c in &mut conditions {
        let Some(c) = c.as_object_mut() else { continue };
        // The plugin's own conditions get the caps the host's have (metav1.Condition's).
        for (field, max) in [
            ("message", MAX_CONDITION_MESSAGE),
            ("reason", MAX_CONDITION_REASON),
        ] {
            if let Some(Value::String(text)) = c.get_mut(field)
                && text.len() > max
            {
                *text = crate::plugin::truncate(text, max).into_owned();
            }
        }
        let ty = c.get("type").cloned();
        let st = c.get("status").cloned();
        let previous = live_conditions
            .and_then(|l| l.iter().find(|p| p.get("type") == ty.as_ref()))
            .filter(|p| p.get("status") == st.as_ref())
            .and_then(|p| p.get("lastTransitionTime"))
            .cloned();
        c.insert(
            "lastTransitionTime".into(),
            previous.unwrap_or_else(|| json!(now)),
        );
        if let Some(g) = generation {
            c.entry("observedGeneration").or_insert(json!(g));
        }
    }
    status.insert("conditions".into(), Value::Array(conditions));
    Value::Object(status)
}

/// A JSON merge patch turning `live` into `desired`; `None` when they are equal.
pub fn merge_diff(live: Option<&Value>, desired: &Value) -> Option<Value> {
    match (live, desired) {
        (Some(l), d) if l == d => None,
        (Some(Value::Object(l)), Value::Object(d)) => {
            let mut patch = Map::new();
            for (k, dv) in d {
                if let Some(p) = merge_diff(l.get(k), dv) {
                    patch.insert(k.clone(), p);
                }
            }
            for k in l.keys().filter(|k| !d.contains_key(*k)) {
                patch.insert(k.clone(), Value::Null);
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        (_, d) => Some(d.clone()),
    }
}

/// The current time as Kubernetes writes it in conditions.
pub fn now() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_adds_observed_generation_and_a_reconciled_condition() {
        let plugin = json!({"readyReplicas": 2, "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]});
        let s = desired_status(None, Some(plugin), Some(3), &Reconciled::ok(), "T1");
        assert_eq!(s["observedGeneration"], 3);
        assert_eq!(s["readyReplicas"], 2);
        let conds = s["conditions"].as_array().unwrap();
        assert_eq!(conds[0]["type"], "Ready");
        assert_eq!(conds[0]["lastTransitionTime"], "T1");
        assert_eq!(conds[1]["type"], "Reconciled");
        assert_eq!(conds[1]["status"], "True");
        assert_eq!(conds[1]["reason"], "Reconciled");
    }

    #[test]
    fn a_plugin_condition_message_and_reason_are_capped_like_the_hosts() {
        let plugin = json!({"conditions": [{"type": "Ready", "status": "True",
            "reason": "R".repeat(5_000), "message": "M".repeat(100_000)}]});
        let s = desired_status(None, Some(plugin), Some(1), &Reconciled::ok(), "T1");
        let ready = &s["conditions"][0];
        let message = ready["message"].as_str().unwrap();
        assert!(message.len() <= MAX_CONDITION_MESSAGE, "{}", message.len());
        assert!(message.starts_with("MMM"));
        assert!(ready["reason"].as_str().unwrap().len() <= MAX_CONDITION_REASON);
    }

    #[test]
    fn last_transition_time_moves_only_when_the_condition_status_changes() {
        let first = desired_status(None, Some(json!({})), Some(1), &Reconciled::ok(), "T1");
        let same = desired_status(
            Some(&first),
            Some(json!({})),
            Some(1),
            &Reconciled::ok(),
            "T2",
        );
        assert_eq!(same["conditions"][0]["lastTransitionTime"], "T1");
        assert_eq!(
            merge_diff(Some(&first), &same),
            None,
            "unchanged status needs no patch"
        );
        let failed = desired_status(
            Some(&same),
            None,
            Some(1),
            &Reconciled::failed("TransientError", "boom"),
            "T3",
        );
        assert_eq!(failed["conditions"][0]["lastTransitionTime"], "T3");
        assert_eq!(failed["conditions"][0]["message"], "boom");
    }

    #[test]
    fn a_failed_call_keeps_the_plugins_last_status() {
        let live = json!({"readyReplicas": 5, "observedGeneration": 1, "conditions": []});
        let s = desired_status(
            Some(&live),
            None,
            Some(2),
            &Reconciled::failed("PermanentError", "bad spec"),
            "T",
        );
        assert_eq!(s["readyReplicas"], 5);
        assert_eq!(
            s["observedGeneration"], 1,
            "the new generation was not reconciled"
        );
    }

    #[test]
    fn a_huge_failure_message_is_cut_to_what_kubernetes_accepts_in_a_condition() {
        let message = "x".repeat(1 << 20);
        let s = desired_status(
            None,
            None,
            Some(1),
            &Reconciled::failed("PermanentError", message),
            "T",
        );
        let kept = s["conditions"][0]["message"].as_str().unwrap_or_default();
        assert!(kept.len() <= MAX_CONDITION_MESSAGE, "{}", kept.len());
        assert!(
            kept.ends_with(" bytes]") && kept.contains("… [truncated "),
            "{}",
            &kept[kept.len() - 40..]
        );
    }

    #[test]
    fn two_conditions_of_one_type_become_the_later_one_and_the_status_settles() {
        let plugin = json!({"conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Available", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "Later"}]});
        let first = desired_status(None, Some(plugin.clone()), Some(1), &Reconciled::ok(), "T1");
        let types: Vec<&Value> = first["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(types, ["Ready", "Available", "Reconciled"]);
        assert_eq!(first["conditions"][0]["reason"], "Later");
        let again = desired_status(Some(&first), Some(plugin), Some(1), &Reconciled::ok(), "T2");
        assert_eq!(
            merge_diff(Some(&first), &again),
            None,
            "no write on the next reconcile"
        );
    }

    #[test]
    fn merge_diff_sets_removed_keys_to_null_and_only_sends_changes() {
        let live = json!({"a": 1, "b": {"c": 2, "d": 3}, "gone": true});
        let desired = json!({"a": 1, "b": {"c": 2, "d": 4}});
        assert_eq!(
            merge_diff(Some(&live), &desired),
            Some(json!({"b": {"d": 4}, "gone": null}))
        );
        assert_eq!(merge_diff(None, &desired), Some(desired.clone()));
    }
}
