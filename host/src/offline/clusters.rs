//! Which cluster a fixture's objects live in (contract 0.4.0): a `cluster:` written beside an object's `apiVersion`.
//!
//! The field is the fixture's, not the object's: it is taken off before the plugin sees the
//! object. An object without it is in the parent's cluster, and the parent's is the case's
//! `cluster:` (the host's own, [`LOCAL_CLUSTER`], when left out). The clusters a case engages
//! are the parent's, those it lists in `clusters:` and those its objects name; a desired child
//! naming any other is refused, as the host refuses one naming a cluster it has not engaged.
//! The plugin is judged as if the operator's policy granted it every cluster the case engages,
//! unless the policy the fixtures run under (`weir dev --policy`) lists its clusters itself.
//! The answer's children are written back the same way, so `expect.children` asserts each
//! child's cluster by the `cluster:` beside it.

use std::collections::BTreeSet;

use serde_json::Value;

use super::format::Fixture;
use crate::plugin::{Clusters, LOCAL_CLUSTER};

/// The fixture-only field naming an object's cluster.
pub const FIELD: &str = "cluster";

/// The clusters of one case: the parent's, and every one the case engages.
#[derive(Clone, Debug)]
pub struct Fleet {
    parent: String,
    engaged: BTreeSet<String>,
}

impl Default for Fleet {
    /// The host's own cluster alone.
    fn default() -> Self {
        Self::new(LOCAL_CLUSTER.to_owned(), [])
    }
}

impl Fleet {
    /// The parent's cluster and the others engaged beside it.
    pub fn new(parent: String, others: impl IntoIterator<Item = String>) -> Self {
        let mut engaged: BTreeSet<String> = others.into_iter().collect();
        engaged.insert(parent.clone());
        Self { parent, engaged }
    }

    /// The clusters `fixture` names.
    pub fn of(fixture: &Fixture) -> Self {
        let parent = fixture
            .cluster
            .clone()
            .unwrap_or_else(|| LOCAL_CLUSTER.into());
        let named = fixture
            .observed
            .iter()
            .chain(&fixture.related)
            .filter_map(cluster_of)
            .map(str::to_owned);
        Self::new(parent, fixture.clusters.iter().cloned().chain(named))
    }

    /// The parent's cluster.
    pub fn parent(&self) -> &str {
        &self.parent
    }

    /// Whether the case engages `cluster`.
    pub fn engaged(&self, cluster: &str) -> bool {
        self.engaged.contains(cluster)
    }

    /// The cluster `object` is written in.
    pub fn of_object<'a>(&'a self, object: &'a Value) -> &'a str {
        cluster_of(object).unwrap_or(&self.parent)
    }

    /// `objects` as a request carries them: each without its `cluster:` (JSON text), and the
    /// cluster of each.
    pub fn split(&self, objects: &[Value]) -> (Vec<String>, Vec<String>) {
        objects
            .iter()
            .map(|o| (without(o).to_string(), self.of_object(o).to_owned()))
            .unzip()
    }

    /// The cluster names of a request for this case's parent and these objects.
    pub fn clusters(&self, children: Vec<String>, related: Vec<String>) -> Clusters {
        Clusters {
            parent: self.parent.clone(),
            children,
            related,
        }
    }

    /// The objects of `objects` in the parent's cluster, without the field.
    pub fn local(&self, objects: &[Value]) -> Vec<Value> {
        self.in_cluster(objects, &self.parent)
    }

    /// The objects of `objects` outside the parent's cluster, each with its cluster, without
    /// the field.
    pub fn elsewhere(&self, objects: &[Value]) -> Vec<(String, Value)> {
        objects
            .iter()
            .filter(|o| self.of_object(o) != self.parent)
            .map(|o| (self.of_object(o).to_owned(), without(o)))
            .collect()
    }

    /// The objects of `objects` in `cluster`, without the field.
    pub fn in_cluster(&self, objects: &[Value], cluster: &str) -> Vec<Value> {
        objects
            .iter()
            .filter(|o| self.of_object(o) == cluster)
            .map(without)
            .collect()
    }

    /// An object as a fixture writes it: `cluster:` beside it when it is not in the parent's.
    pub fn written(&self, object: &Value, cluster: Option<&str>) -> Value {
        let mut object = without(object);
        if let (Some(cluster), Some(fields)) = (cluster, object.as_object_mut())
            && cluster != self.parent
        {
            fields.insert(FIELD.into(), Value::String(cluster.to_owned()));
        }
        object
    }

    /// The answer's children as a fixture writes them (`clusters` names each one's cluster,
    /// in the same order).
    pub fn answered(&self, children: &[Value], clusters: &[Option<String>]) -> Vec<Value> {
        children
            .iter()
            .enumerate()
            .map(|(i, c)| self.written(c, clusters.get(i).and_then(Option::as_deref)))
            .collect()
    }

    /// Expected children as they are compared: a `cluster:` naming the parent's is left out.
    pub fn expected(&self, children: &[Value]) -> Vec<Value> {
        children
            .iter()
            .map(|c| self.written(c, cluster_of(c)))
            .collect()
    }
}

/// The cluster `object` names, if it names one.
pub fn cluster_of(object: &Value) -> Option<&str> {
    object.get(FIELD).and_then(Value::as_str)
}

/// `object` without the fixture's field.
fn without(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(fields) = object.as_object_mut() {
        fields.remove(FIELD);
    }
    object
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_without_a_cluster_is_in_the_parents_and_keeps_no_field() {
        let fleet = Fleet::new("hub".into(), ["member-a".to_owned()]);
        let objects = [
            json!({"kind": "A", "cluster": "member-a"}),
            json!({"kind": "B"}),
        ];
        let (texts, clusters) = fleet.split(&objects);
        assert_eq!(texts, [r#"{"kind":"A"}"#, r#"{"kind":"B"}"#]);
        assert_eq!(clusters, ["member-a", "hub"]);
        assert!(fleet.engaged("member-a") && fleet.engaged("hub"));
        assert!(!fleet.engaged("member-b"));
        assert_eq!(fleet.local(&objects), [json!({"kind": "B"})]);
    }

    #[test]
    fn a_child_in_the_parents_cluster_is_written_without_the_field() {
        let fleet = Fleet::new("hub".into(), []);
        let answered = fleet.answered(
            &[
                json!({"kind": "A"}),
                json!({"kind": "B"}),
                json!({"kind": "C"}),
            ],
            &[Some("hub".into()), Some("member-a".into())],
        );
        assert_eq!(
            answered,
            [
                json!({"kind": "A"}),
                json!({"kind": "B", "cluster": "member-a"}),
                json!({"kind": "C"}),
            ]
        );
        let expected = fleet.expected(&[json!({"kind": "A", "cluster": "hub"})]);
        assert_eq!(expected, [json!({"kind": "A"})]);
    }
}
