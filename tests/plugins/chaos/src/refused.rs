//! Answers the host refuses although the plugin call itself succeeds (see the table in `lib.rs`).

use serde_json::{Value, json};

use super::bindings::ReconcileResponse;
use super::{config_map, ok_response};

/// The answer for a refusal mode, or `None` if `mode` is not one.
pub(crate) fn answer(mode: &str, name: &str, spec: &Value) -> Option<ReconcileResponse> {
    let mut response = ok_response(name, mode);
    let data = json!({"mode": mode});
    response.children = match mode {
        "elsewhere" => {
            let namespace = spec["namespace"].as_str().unwrap_or("kube-system");
            vec![child(name, data, |m| m["namespace"] = json!(namespace))]
        }
        "duplicate" => vec![config_map(name, data.clone()), config_map(name, data)],
        "invalid-name" => vec![config_map(&format!("{name}_Not_A_Name"), data)],
        "many" => {
            let count = spec["count"].as_u64().unwrap_or(257);
            (0..count)
                .map(|i| config_map(&format!("{name}-{i}"), data.clone()))
                .collect()
        }
        "finalizers" => vec![child(name, data, |m| {
            m["finalizers"] = json!(["test.weir.dev/keep"]);
        })],
        "token" => vec![
            json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": name,
                    "annotations": {"kubernetes.io/service-account.name": "default"},
                },
                "type": "kubernetes.io/service-account-token",
            })
            .to_string(),
        ],
        "huge-status" => {
            let bytes = spec["bytes"].as_u64().unwrap_or(2 << 20) as usize;
            response.status = Some(json!({"mode": mode, "filler": "x".repeat(bytes)}).to_string());
            vec![config_map(name, data)]
        }
        "adopt" => {
            let target = spec["target"].as_str().unwrap_or("foreign");
            vec![config_map(name, data.clone()), config_map(target, data)]
        }
        _ => return None,
    };
    Some(response)
}

/// A ConfigMap named `name` whose metadata `edit` changes.
fn child(name: &str, data: Value, edit: impl FnOnce(&mut Value)) -> String {
    let mut metadata = json!({"name": name});
    edit(&mut metadata);
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}).to_string()
}
