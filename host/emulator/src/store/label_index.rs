//! Pods by label and Services by selector, so the workload controllers find what a change touches without scanning a namespace.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

/// `(namespace, label key, label value)`.
type Pair = (String, String, String);

/// The index, kept by the store as objects are stored and removed.
#[derive(Debug, Default)]
pub struct LabelIndex {
    /// Names of the Pods carrying each label, per namespace.
    pods: HashMap<Pair, BTreeSet<String>>,
    /// Names of the Services whose selector's first pair (in key order) is this label: a
    /// Service selecting a Pod always shows up under one of the Pod's labels.
    services: HashMap<Pair, BTreeSet<String>>,
}

fn pairs(map: Option<&Value>) -> impl Iterator<Item = (&String, &str)> {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k, v.as_str()?)))
}

fn pair(ns: &str, k: &str, v: &str) -> Pair {
    (ns.to_string(), k.to_string(), v.to_string())
}

fn update(index: &mut HashMap<Pair, BTreeSet<String>>, at: Pair, name: &str, add: bool) {
    if add {
        index.entry(at).or_default().insert(name.to_string());
    } else if let Some(names) = index.get_mut(&at) {
        names.remove(name);
        if names.is_empty() {
            index.remove(&at);
        }
    }
}

impl LabelIndex {
    /// Index (`add`) or forget a stored Pod's labels.
    pub fn track_pod(&mut self, ns: &str, name: &str, pod: &Value, add: bool) {
        for (k, v) in pairs(pod.pointer("/metadata/labels")) {
            update(&mut self.pods, pair(ns, k, v), name, add);
        }
    }

    /// Index (`add`) or forget a stored Service's selector.
    pub fn track_service(&mut self, ns: &str, name: &str, svc: &Value, add: bool) {
        if let Some((k, v)) = pairs(svc.pointer("/spec/selector")).next() {
            update(&mut self.services, pair(ns, k, v), name, add);
        }
    }

    /// Names of the Pods in `ns` labelled `k=v`.
    pub fn pods_labelled(&self, ns: &str, k: &str, v: &str) -> Vec<String> {
        self.pods
            .get(&pair(ns, k, v))
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Names of the Services in `ns` that may select an object labelled `labels` (a superset:
    /// the caller checks each selector).
    pub fn services_for(&self, ns: &str, labels: Option<&Map<String, Value>>) -> BTreeSet<String> {
        labels
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| self.services.get(&pair(ns, k, v.as_str()?)))
            .flatten()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_service_is_found_from_any_pod_it_selects_and_forgotten_when_removed() {
        let mut index = LabelIndex::default();
        let svc = json!({"spec": {"selector": {"app": "web", "tier": "front"}}});
        index.track_service("default", "web", &svc, true);
        let labels = json!({"tier": "front", "app": "web", "pod-template-hash": "x"});
        assert_eq!(
            index.services_for("default", labels.as_object()),
            BTreeSet::from(["web".to_string()])
        );
        assert!(index.services_for("other", labels.as_object()).is_empty());
        index.track_service("default", "web", &svc, false);
        assert!(index.services_for("default", labels.as_object()).is_empty());
        assert!(index.services.is_empty());
    }

    #[test]
    fn pods_are_listed_by_each_of_their_labels() {
        let mut index = LabelIndex::default();
        let pod = json!({"metadata": {"labels": {"app": "web", "pod-template-hash": "x"}}});
        index.track_pod("default", "web-1", &pod, true);
        index.track_pod("default", "web-2", &pod, true);
        assert_eq!(
            index.pods_labelled("default", "app", "web"),
            ["web-1", "web-2"]
        );
        index.track_pod("default", "web-1", &pod, false);
        assert_eq!(
            index.pods_labelled("default", "pod-template-hash", "x"),
            ["web-2"]
        );
    }
}
