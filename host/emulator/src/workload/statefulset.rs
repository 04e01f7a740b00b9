//! The statefulset controller: Pods `NAME-0` … `NAME-(n-1)`, each created once the ones before
//! it are Running and Ready (`OrderedReady`; all at once for `Parallel`), removed from the
//! highest ordinal down. Template changes are not rolled out to existing Pods.

use serde_json::{Value, json};

use super::{active, controlled, controller_ref, create, delete, ready, res, write_status};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kube-controller-manager";

/// Reconcile one StatefulSet.
pub(super) fn reconcile(store: &mut Store, key: &ObjKey) {
    let Some(sts) = store.get(key) else { return };
    if object::is_deleting(&sts) {
        return;
    }
    let replicas = sts
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    let parallel = sts.pointer("/spec/podManagementPolicy") == Some(&json!("Parallel"));
    let pods_res = res("", "pods");
    let template = sts.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let revision = format!(
        "{}-{}",
        key.name,
        super::deployment::template_hash(&template, 0)
    );
    let pod_key = |i: i64| ObjKey {
        res: pods_res.clone(),
        ns: key.ns.clone(),
        name: format!("{}-{i}", key.name),
    };
    for i in 0..replicas {
        match store.get(&pod_key(i)) {
            Some(p) if ready(&p) => continue,
            Some(_) if parallel => continue,
            Some(_) => break,
            None => {
                let name = pod_key(i).name;
                let mut body = super::replicaset::pod_from_template(
                    &template,
                    controller_ref(&sts, "apps/v1", "StatefulSet"),
                    None,
                    Some(&name),
                );
                body["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = json!(name);
                body["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = json!(i.to_string());
                body["metadata"]["labels"]["controller-revision-hash"] = json!(revision);
                body["spec"]["hostname"] = json!(name);
                if let Some(svc) = sts
                    .pointer("/spec/serviceName")
                    .filter(|s| s.as_str().is_some_and(|s| !s.is_empty()))
                {
                    body["spec"]["subdomain"] = svc.clone();
                }
                create(store, &pods_res, &key.ns, body, MANAGER);
                if !parallel {
                    break;
                }
            }
        }
    }
    let owned = controlled(store, &sts, &pods_res);
    let mut extra: Vec<(i64, ObjKey)> = owned
        .iter()
        .filter_map(|(k, _)| {
            let ordinal: i64 = k.name.rsplit_once('-')?.1.parse().ok()?;
            (ordinal >= replicas).then(|| (ordinal, k.clone()))
        })
        .collect();
    extra.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
    if let Some((_, k)) = extra.first() {
        delete(store, k);
    }
    let Some(sts) = store.get(key) else { return };
    let pods: Vec<_> = controlled(store, &sts, &pods_res)
        .into_iter()
        .filter(|(_, p)| active(p))
        .collect();
    let count = pods.len() as i64;
    let ready_count = pods.iter().filter(|(_, p)| ready(p)).count() as i64;
    let status = json!({
        "observedGeneration": object::generation(&sts),
        "replicas": count,
        "readyReplicas": ready_count,
        "currentReplicas": count,
        "updatedReplicas": count,
        "availableReplicas": ready_count,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    });
    write_status(store, key, status, MANAGER);
}
