//! Checks and defaults every write passes before it is stored (the emulator's built-in admission).

use serde_json::Value;

use crate::kinds::resources::ResourceType;
use crate::store::Store;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::{builtin_prune, object, schema};
use crate::write::crd;
use crate::write::opts::{Validation, WriteOpts};

/// Reject a body whose `apiVersion`/`kind` do not match the endpoint.
pub fn check_type(rt: &ResourceType, body: &Value) -> ApiResult<()> {
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if (!kind.is_empty() && kind != rt.kind)
        || (!api_version.is_empty() && api_version != rt.api_version())
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({}), or kind {kind} is not {}",
            rt.api_version(),
            rt.kind
        )));
    }
    Ok(())
}

/// A `generateName` suffix in kube-apiserver's alphabet.
pub fn random_suffix(store: &mut Store) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let uid = store.new_uid();
    let mut n: u64 = uid.bytes().fold(1469598103934665603, |h, b| {
        (h ^ b as u64).wrapping_mul(1099511628211)
    });
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
            n /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Validate against a CRD schema, pruning unknown fields as the `fieldValidation` mode says.
pub fn validate(
    rt: &ResourceType,
    obj: &mut Value,
    opts: &WriteOpts,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let Some(s) = &rt.schema else {
        if rt.kind == "CustomResourceDefinition" {
            let causes = crd::validate(obj);
            if !causes.is_empty() {
                return Err(ApiError::invalid(
                    &rt.group,
                    &rt.kind,
                    object::name(obj),
                    causes,
                ));
            }
        }
        return builtin_fields(rt, obj, opts, warnings);
    };
    let report = schema::validate_and_prune(s, obj);
    if !report.errors.is_empty() {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            object::name(obj),
            report.errors,
        ));
    }
    if !report.unknown.is_empty() {
        match opts.validation {
            Validation::Strict => {
                let list: Vec<String> = report
                    .unknown
                    .iter()
                    .map(|f| format!("unknown field \"{f}\""))
                    .collect();
                return Err(ApiError::bad_request(format!(
                    "strict decoding error: {}",
                    list.join(", ")
                )));
            }
            Validation::Warn => warnings.extend(
                report
                    .unknown
                    .iter()
                    .map(|f| format!("unknown field \"{f}\"")),
            ),
            Validation::Ignore => {}
        }
    }
    Ok(())
}

/// Unknown fields of a built-in kind, against its OpenAPI schema: under `Strict` the error
/// kube-apiserver's strict decoder gives (400, `strict decoding error: unknown field "spec.replica"`),
/// under `Warn` one warning per field; either way the field is dropped, as decoding into Go types does.
fn builtin_fields(
    rt: &ResourceType,
    obj: &mut Value,
    opts: &WriteOpts,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let Some(unknown) = builtin_prune::pruner().prune_unknown(&rt.group, &rt.kind, obj) else {
        return Ok(());
    };
    if unknown.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    match opts.validation {
        Validation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            list.join(", "),
            kind = rt.kind,
            version = rt.version,
        ))),
        Validation::Warn => {
            warnings.extend(list);
            Ok(())
        }
        Validation::Ignore => Ok(()),
    }
}

/// kube-apiserver's JSON patch treats a missing path as `null` in a `test` operation; kube-runtime's
/// finalizer helper relies on that (`test /metadata/finalizers == null`, then `add`).
pub fn tolerate_null_tests(doc: &Value, ops: Value) -> Value {
    match ops {
        Value::Array(list) => Value::Array(
            list.into_iter()
                .filter(|op| {
                    let is_null_test = op.get("op").and_then(Value::as_str) == Some("test")
                        && op.get("value").is_some_and(Value::is_null);
                    let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                    !(is_null_test && doc.pointer(path).is_none_or(Value::is_null))
                })
                .collect(),
        ),
        other => other,
    }
}
