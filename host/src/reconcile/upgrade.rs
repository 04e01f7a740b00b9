//! ⑤c Moves the fields a create recorded under Weir's manager into its server-side apply entry, as client-go's `csaupgrade` does.
//!
//! A child Weir creates is written with `POST` (never an apply, which could take over a foreign
//! object of the same name). kube-apiserver records a create as operation `Update`, so the
//! fields of the first manifest belong to an `Update` entry of Weir's field manager, not to its
//! `Apply` entry. Server-side apply only removes fields the applier's *own* `Apply` entry held:
//! a field the plugin later drops would stay forever, owned by the create.
//!
//! The fix is the one client-go ships for moving from client-side to server-side apply
//! (`k8s.io/client-go/util/csaupgrade`): rewrite `managedFields` so that the manager's `Update`
//! entry is merged into its `Apply` entry (or relabelled `Apply` when there is none), and send
//! that list back with the object's `resourceVersion` as a precondition. kube-apiserver honours
//! `managedFields` a client sends in a patch of the main resource; the precondition turns a
//! concurrent change into `409 Conflict` (retried) instead of overwriting someone's entry.
//! Fields a create recorded but the manifest never set (server defaults) may then be removed by
//! the next apply and are defaulted again, as `csaupgrade` documents.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use serde_json::{Map, Value};

const UPDATE: &str = "Update";
const APPLY: &str = "Apply";

/// Whether `entry` is `manager`'s entry for `operation` on the main resource.
fn is(entry: &ManagedFieldsEntry, manager: &str, operation: &str) -> bool {
    entry.manager.as_deref() == Some(manager)
        && entry.operation.as_deref() == Some(operation)
        && entry.subresource.as_deref().is_none_or(str::is_empty)
}

/// Whether `manager`'s `Update` entries on the main resource own a field its `Apply` entry does
/// not: a field the create set and the manifest since dropped, which apply alone would leave.
///
/// Only then is the upgrade worth its write. Server-side apply shares a field between managers
/// that set it to the same value, and takes it from the others when it changes it; so after an
/// apply the create's entry holds no field outside the `Apply` entry unless the manifest dropped
/// one, and a child whose manifest only changes values costs one write per change. (An API
/// server that records defaulted fields in the create's entry makes them count as dropped: the
/// upgrade then happens once, at the child's first change.)
pub fn holds_dropped(entries: &[ManagedFieldsEntry], manager: &str) -> bool {
    fn fields(e: &ManagedFieldsEntry) -> Option<&Value> {
        e.fields_v1.as_ref().map(|f| &f.0)
    }
    let applied = entries.iter().find(|e| is(e, manager, APPLY));
    entries
        .iter()
        .filter(|e| is(e, manager, UPDATE))
        .any(|update| match (applied, fields(update)) {
            (_, None) => false,
            (Some(applied), Some(created)) if applied.api_version == update.api_version => {
                !within(created, fields(applied).unwrap_or(&Value::Null))
            }
            // No apply entry yet, or one of another version: the fields cannot be compared.
            _ => true,
        })
}

/// Whether every path of the `FieldsV1` trie `inner` is a path of `outer`. A `.` marks that a
/// node is owned itself; a node that `outer` holds at all is enough for it.
fn within(inner: &Value, outer: &Value) -> bool {
    let Value::Object(inner) = inner else {
        return true;
    };
    inner.iter().all(|(key, child)| {
        key == "."
            || outer
                .as_object()
                .and_then(|o| o.get(key))
                .is_some_and(|o| within(child, o))
    })
}

/// `managedFields` with `manager`'s `Update` entries folded into its `Apply` entry, or `None`
/// when the manager holds no `Update` entry on the main resource (nothing to do).
///
/// Follows `csaupgrade.UpgradeManagedFields`: without an `Apply` entry the most recent `Update`
/// entry becomes it; the fields of the `Update` entry of the same `apiVersion` are added to it;
/// every other `Update` entry of the manager is dropped.
pub fn upgraded(entries: &[ManagedFieldsEntry], manager: &str) -> Option<Vec<ManagedFieldsEntry>> {
    if !entries.iter().any(|e| is(e, manager, UPDATE)) {
        return None;
    }
    let mut entries = entries.to_vec();
    let target = match entries.iter().position(|e| is(e, manager, APPLY)) {
        Some(index) => index,
        None => {
            // Entries are sorted most recent first, as kube-apiserver keeps them.
            let index = entries.iter().position(|e| is(e, manager, UPDATE))?;
            entries[index].operation = Some(APPLY.to_owned());
            index
        }
    };
    let api_version = entries[target].api_version.clone();
    if let Some(update) = entries
        .iter()
        .find(|e| is(e, manager, UPDATE) && e.api_version == api_version)
        .and_then(|e| e.fields_v1.clone())
    {
        let mut fields = entries[target]
            .fields_v1
            .take()
            .map_or_else(|| Value::Object(Map::new()), |f| f.0);
        union(&mut fields, update.0);
        entries[target].fields_v1 = Some(FieldsV1(fields));
        entries[target].fields_type = Some("FieldsV1".to_owned());
    }
    entries.retain(|e| !is(e, manager, UPDATE));
    Some(entries)
}

/// Adds the paths of the `FieldsV1` trie `other` to `into` (a trie's union is a deep merge).
fn union(into: &mut Value, other: Value) {
    match (into, other) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b {
                match a.get_mut(&key) {
                    Some(existing) => union(existing, value),
                    None => {
                        a.insert(key, value);
                    }
                }
            }
        }
        (into, other) => *into = other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            api_version: Some("v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        }
    }

    #[test]
    fn an_object_only_applied_needs_no_upgrade() {
        let entries = [
            entry("weir/x", "Apply", json!({"f:data": {"f:a": {}}})),
            entry("kubectl", "Update", json!({"f:data": {"f:b": {}}})),
        ];
        assert!(upgraded(&entries, "weir/x").is_none());
    }

    #[test]
    fn a_create_entry_alone_is_relabelled_apply() {
        let entries = [
            entry(
                "weir/x",
                "Update",
                json!({"f:data": {"f:a": {}, "f:b": {}}}),
            ),
            entry("kubectl", "Update", json!({"f:data": {"f:c": {}}})),
        ];
        let up = upgraded(&entries, "weir/x").expect("an Update entry to upgrade");
        assert_eq!(up.len(), 2);
        assert_eq!(up[0].operation.as_deref(), Some("Apply"));
        assert_eq!(
            up[0].fields_v1.as_ref().map(|f| &f.0),
            Some(&json!({"f:data": {"f:a": {}, "f:b": {}}}))
        );
        assert_eq!(
            up[1].manager.as_deref(),
            Some("kubectl"),
            "others untouched"
        );
    }

    #[test]
    fn a_create_entry_is_merged_into_the_apply_entry_and_removed() {
        let entries = [
            entry("weir/x", "Apply", json!({"f:data": {"f:a": {}}})),
            entry(
                "weir/x",
                "Update",
                json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}}}}),
            ),
        ];
        let up = upgraded(&entries, "weir/x").expect("an Update entry to upgrade");
        assert_eq!(up.len(), 1);
        assert_eq!(
            up[0].fields_v1.as_ref().map(|f| &f.0),
            Some(&json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {".": {}}}}))
        );
    }

    #[test]
    fn a_create_entry_within_the_apply_entry_is_not_worth_a_write() {
        // Applied since with new values: the create's entry keeps the fields it shares.
        let entries = [
            entry(
                "weir/x",
                "Apply",
                json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:l": {}}}}),
            ),
            entry(
                "weir/x",
                "Update",
                json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}}}),
            ),
            entry("kubectl", "Update", json!({"f:data": {"f:c": {}}})),
        ];
        assert!(!holds_dropped(&entries, "weir/x"));
    }

    #[test]
    fn a_field_the_manifest_dropped_is_worth_the_upgrade() {
        let entries = [
            entry("weir/x", "Apply", json!({"f:data": {"f:a": {}}})),
            entry(
                "weir/x",
                "Update",
                json!({"f:data": {"f:a": {}, "f:b": {}}}),
            ),
        ];
        assert!(holds_dropped(&entries, "weir/x"));
        let dropped_map = [
            entry("weir/x", "Apply", json!({"f:data": {"f:a": {}}})),
            entry(
                "weir/x",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}}}}),
            ),
        ];
        assert!(holds_dropped(&dropped_map, "weir/x"));
    }

    #[test]
    fn a_create_never_applied_is_worth_the_upgrade() {
        let entries = [entry("weir/x", "Update", json!({"f:data": {"f:a": {}}}))];
        assert!(holds_dropped(&entries, "weir/x"));
        let applied_only = [entry("weir/x", "Apply", json!({"f:data": {"f:a": {}}}))];
        assert!(!holds_dropped(&applied_only, "weir/x"));
    }

    #[test]
    fn a_status_update_of_the_same_manager_is_left_alone() {
        let mut status = entry("weir/x", "Update", json!({"f:status": {}}));
        status.subresource = Some("status".into());
        assert!(upgraded(&[status], "weir/x").is_none());
    }
}
