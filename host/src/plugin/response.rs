//! Checks a plugin's raw answer (a reconcile's or a finalize's) against the contract before the host trusts it.

use serde_json::Value;

use super::bindings::{RawAnswer, RawFinalize};
use super::types::{FinalizeResponse, PluginInfo, ReconcileResponse};

/// Why an answer was refused.
pub(super) enum ContractBreach {
    /// The JSON text exceeds the response cap.
    TooLarge(usize),
    /// The answer breaks the contract; the text says how.
    Invalid(String),
}

/// Size-checks, parses and validates a successful reconcile answer.
pub(super) fn check(
    raw: RawAnswer,
    info: &PluginInfo,
    max_bytes: usize,
) -> Result<ReconcileResponse, ContractBreach> {
    let size = raw.children.iter().map(String::len).sum::<usize>()
        + raw.status.as_ref().map_or(0, String::len)
        + raw
            .clusters
            .iter()
            .flatten()
            .map(String::len)
            .sum::<usize>();
    if size > max_bytes {
        return Err(ContractBreach::TooLarge(size));
    }
    let children = raw
        .children
        .iter()
        .enumerate()
        .map(|(i, text)| child(i, text, info))
        .collect::<Result<Vec<_>, _>>()?;
    let status = match raw.status {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => Some(v),
            Ok(_) => {
                return Err(ContractBreach::Invalid(
                    "status is not a JSON object".into(),
                ));
            }
            Err(e) => return Err(ContractBreach::Invalid(format!("status is not JSON: {e}"))),
        },
    };
    Ok(ReconcileResponse {
        children,
        clusters: raw.clusters,
        status,
        requeue: raw.requeue,
    })
}

/// Size-checks, parses and validates a finalize answer: its children and status by the same
/// rules as a reconcile answer's.
pub(super) fn check_finalize(
    raw: RawFinalize,
    info: &PluginInfo,
    max_bytes: usize,
) -> Result<FinalizeResponse, ContractBreach> {
    let RawFinalize {
        children,
        clusters,
        status,
        finalized,
        requeue,
    } = raw;
    let given = children.is_some();
    let as_answer = RawAnswer {
        children: children.unwrap_or_default(),
        clusters,
        status,
        requeue,
    };
    let checked = check(as_answer, info, max_bytes)?;
    Ok(FinalizeResponse {
        children: given.then_some(checked.children),
        clusters: checked.clusters,
        status: checked.status,
        finalized,
        requeue: checked.requeue,
    })
}

/// One desired child: a JSON object naming its kind and name, of a kind the
/// plugin declared in `describe`.
fn child(index: usize, text: &str, info: &PluginInfo) -> Result<Value, ContractBreach> {
    let invalid = |why: String| ContractBreach::Invalid(format!("child #{index}: {why}"));
    let value: Value = serde_json::from_str(text).map_err(|e| invalid(format!("not JSON: {e}")))?;
    let field = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
    let (Some(api_version), Some(kind)) = (field(&value, "apiVersion"), field(&value, "kind"))
    else {
        return Err(invalid("a child needs `apiVersion` and `kind`".into()));
    };
    let name = value
        .get("metadata")
        .and_then(|m| field(m, "name"))
        .unwrap_or_default();
    if name.is_empty() {
        return Err(invalid(format!("{kind} has no metadata.name")));
    }
    if !info
        .children
        .iter()
        .any(|k| k.kind == kind && k.api_version() == api_version)
    {
        return Err(invalid(format!(
            "{api_version} {kind} {name:?} is not among the child kinds the plugin declared"
        )));
    }
    Ok(value)
}
