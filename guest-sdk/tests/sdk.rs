//! The SDK's typed API, driven through the same JSON path the component uses.

#![expect(
    clippy::unwrap_used,
    reason = "a test should stop loudly at the first unexpected error"
)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use weir_guest_sdk::{
    Child, Children, Condition, Error, Finalize, Kind, Outcome, Reconciler, Requeue, testing,
};

/// A parent whose spec says what the test plugin does.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.dev", version = "v1", kind = "Note", namespaced)]
#[serde(rename_all = "camelCase")]
pub struct NoteSpec {
    text: String,
    #[serde(default)]
    requeue_ms: Option<u64>,
    #[serde(default)]
    fail: Option<String>,
}

/// A cluster-scoped kind, to check scope detection.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.dev", version = "v1", kind = "Shelf")]
pub struct ShelfSpec {}

struct Notes;

impl Reconciler for Notes {
    type Parent = Note;
    const NAME: &'static str = "note";
    const VERSION: &'static str = "1.2.3";
    const FINALIZER: Option<&'static str> = Some("example.dev/notes");

    fn children() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn reconcile(note: &Note, observed: &Children) -> Result<Outcome, Error> {
        match note.spec.fail.as_deref() {
            Some("transient") => return Err(Error::transient("waiting")),
            Some(_) => return Err(Error::permanent("bad note")),
            None => {}
        }
        let mut page = ConfigMap::default();
        page.metadata.name = Some(note.name_any());
        page.data = Some([("text".to_owned(), note.spec.text.clone())].into());
        // Echo what was observed so tests can see the lookup worked.
        let seen = observed
            .get::<ConfigMap>(&note.name_any())?
            .and_then(|c| c.data)
            .map(|d| d["text"].clone());
        let outcome = Outcome::apply(vec![page.into()]).status(
            json!({"seen": seen, "conditions": [Condition::new("Ready", true, "Written", "ok")]}),
        );
        Ok(match note.spec.requeue_ms {
            Some(0) => outcome.requeue_now(),
            Some(ms) => outcome.requeue_after(Duration::from_millis(ms)),
            None => outcome,
        })
    }

    fn finalize(note: &Note, observed: &Children) -> Result<Finalize, Error> {
        Ok(if observed.is_empty() {
            Finalize::Complete
        } else {
            Finalize::AgainAfter(Duration::from_secs(note.spec.text.len() as u64))
        })
    }
}

fn note(text: &str) -> Note {
    let mut note = Note::new(
        "n1",
        NoteSpec {
            text: text.to_owned(),
            requeue_ms: None,
            fail: None,
        },
    );
    note.metadata.namespace = Some("ns".to_owned());
    note
}

fn config_map(name: &str, text: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some([("text".to_owned(), text.to_owned())].into());
    cm
}

#[test]
fn children_come_back_as_json_with_api_version_and_kind() {
    let out = testing::reconcile::<Notes>(&note("hi"), vec![]).unwrap();
    let child = out.children.iter().next().unwrap();
    assert_eq!(child["apiVersion"], "v1");
    assert_eq!(child["kind"], "ConfigMap");
    assert_eq!(child["data"]["text"], "hi");
    assert_eq!(out.requeue, Requeue::Done);
}

#[test]
fn observed_children_are_found_by_type_and_name_only() {
    let mut same_name_other_kind = Service::default();
    same_name_other_kind.metadata.name = Some("n1".to_owned());
    let observed: Vec<Child> = vec![
        same_name_other_kind.into(),
        config_map("other", "no").into(),
        config_map("n1", "yes").into(),
    ];
    let out = testing::reconcile::<Notes>(&note("hi"), observed).unwrap();
    assert_eq!(out.status.unwrap()["seen"], "yes");
}

#[test]
fn list_returns_every_child_of_a_type() {
    let children: Children = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    ]
    .into();
    let names: Vec<_> = children
        .list::<ConfigMap>()
        .unwrap()
        .into_iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(names, ["a", "c"]);
}

/// What a plugin reads of a ConfigMap when it needs only one key.
#[derive(Deserialize, Debug, PartialEq)]
struct TextOnly {
    data: TextData,
}

#[derive(Deserialize, Debug, PartialEq)]
struct TextData {
    text: String,
}

#[test]
fn get_as_decodes_only_the_part_asked_for_of_the_child_of_that_type_and_name() {
    let children: Children = vec![
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "n1"}, "data": {"text": "service"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n1"}, "data": {"text": "yes", "other": "x"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n2"}, "data": {"text": 5}}),
    ]
    .into();
    let part = children.get_as::<ConfigMap, TextOnly>("n1").unwrap();
    assert_eq!(
        part,
        Some(TextOnly {
            data: TextData {
                text: "yes".to_owned()
            }
        })
    );
    assert_eq!(children.get_as::<ConfigMap, TextOnly>("n3").unwrap(), None);
    let err = children.get_as::<ConfigMap, TextOnly>("n2").unwrap_err();
    assert!(!err.is_transient());
    assert!(
        err.message().contains("ConfigMap n2") && err.message().contains("expected a string"),
        "{err}"
    );
}

#[test]
fn a_child_that_does_not_decode_is_a_permanent_error_naming_it() {
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n1"}, "data": {"text": 5}});
    let err = testing::reconcile::<Notes>(&note("hi"), vec![Child::json(bad)]).unwrap_err();
    assert!(!err.is_transient());
    assert!(
        err.message().contains("ConfigMap n1") && err.message().contains("expected a string"),
        "{err}"
    );
}

#[test]
fn a_parent_missing_a_field_is_a_permanent_error_naming_parent_and_field() {
    let parent = json!({"apiVersion": "example.dev/v1", "kind": "Note", "metadata": {"name": "n1", "namespace": "ns"},
                        "spec": {}});
    let err = testing::reconcile::<Notes>(&parent, vec![]).unwrap_err();
    assert_eq!(
        err,
        Error::permanent("Note ns/n1 is invalid: spec: missing field `text`")
    );
}

#[test]
fn plugin_errors_keep_their_kind_and_message() {
    let mut transient = note("hi");
    transient.spec.fail = Some("transient".to_owned());
    assert_eq!(
        testing::reconcile::<Notes>(&transient, vec![]).unwrap_err(),
        Error::Transient("waiting".to_owned())
    );
    let mut permanent = note("hi");
    permanent.spec.fail = Some("yes".to_owned());
    assert_eq!(
        testing::reconcile::<Notes>(&permanent, vec![]).unwrap_err(),
        Error::Permanent("bad note".to_owned())
    );
}

#[test]
fn requeue_follows_the_outcome_builder() {
    let mut later = note("hi");
    later.spec.requeue_ms = Some(1500);
    assert_eq!(
        testing::reconcile::<Notes>(&later, vec![]).unwrap().requeue,
        Requeue::After(Duration::from_millis(1500))
    );
    later.spec.requeue_ms = Some(0);
    assert_eq!(
        testing::reconcile::<Notes>(&later, vec![]).unwrap().requeue,
        Requeue::Now
    );
}

#[test]
fn conditions_leave_the_transition_time_to_the_host() {
    let out = testing::reconcile::<Notes>(&note("hi"), vec![]).unwrap();
    assert_eq!(
        out.status.unwrap()["conditions"],
        json!([{"type": "Ready", "status": "True", "reason": "Written", "message": "ok"}])
    );
}

#[test]
fn finalize_reports_complete_or_when_to_ask_again() {
    assert_eq!(
        testing::finalize::<Notes>(&note("abc"), vec![]).unwrap(),
        Finalize::Complete
    );
    let again =
        testing::finalize::<Notes>(&note("abc"), vec![config_map("n1", "x").into()]).unwrap();
    assert_eq!(again, Finalize::AgainAfter(Duration::from_secs(3)));
}

#[test]
fn describe_reports_name_version_kinds_finalizer_and_crd() {
    let info = testing::describe::<Notes>();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("note", "1.2.3")
    );
    assert_eq!(
        info.parent,
        Kind {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Note".into(),
            plural: "notes".into(),
            namespaced: true
        }
    );
    assert_eq!(
        info.children,
        [Kind {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true
        }]
    );
    assert_eq!(info.finalizer.as_deref(), Some("example.dev/notes"));
    let crd: serde_json::Value = serde_json::from_str(info.crd.as_deref().unwrap()).unwrap();
    assert_eq!(crd["metadata"]["name"], "notes.example.dev");
}

#[test]
fn cluster_scoped_parents_are_declared_as_such() {
    assert!(!Kind::of_custom::<Shelf>().namespaced);
    assert!(Kind::of_custom::<Note>().namespaced);
}

#[test]
fn fed_back_children_reproduce_the_same_answer() {
    let first = testing::reconcile::<Notes>(&note("hi"), vec![]).unwrap();
    let again = testing::reconcile::<Notes>(&note("hi"), first.as_observed()).unwrap();
    assert_eq!(again.children, first.children);
}

/// Contract 0.4.0: places the note's page in every cluster `spec.text` names (comma-separated),
/// reads what each holds, and the settings selected there.
struct Spread;

impl Reconciler for Spread {
    type Parent = Note;
    const NAME: &'static str = "spread";
    const VERSION: &'static str = "0.4.0";

    fn children() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn related() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn select(note: &Note) -> Result<Vec<weir_guest_sdk::Selection>, Error> {
        Ok(note
            .spec
            .text
            .split(',')
            .map(|c| weir_guest_sdk::Selection::name::<ConfigMap>("settings").in_cluster(c))
            .collect())
    }

    fn reconcile(note: &Note, observed: &Children) -> Result<Outcome, Error> {
        let mut children = Vec::new();
        let mut seen = serde_json::Map::new();
        for cluster in note.spec.text.split(',') {
            children.push(Child::from(config_map("page", cluster)).in_cluster(cluster));
            let there = observed.in_cluster(cluster).get::<ConfigMap>("page")?;
            let settings = observed
                .related()
                .in_cluster(cluster)
                .get::<ConfigMap>("settings")?;
            let text = |cm: Option<ConfigMap>| cm.and_then(|c| c.data).map(|d| d["text"].clone());
            seen.insert(
                cluster.to_owned(),
                json!({"page": text(there), "settings": text(settings)}),
            );
        }
        let here = observed.get::<ConfigMap>("page")?.is_some();
        Ok(Outcome::apply(children).status(json!({
            "cluster": observed.cluster(),
            "clusters": observed.clusters(),
            "here": here,
            "seen": seen,
        })))
    }
}

#[test]
fn each_child_names_its_cluster_and_each_observed_object_is_found_in_its_own() {
    let observed = vec![
        Child::from(config_map("page", "old")).in_cluster("member-b"),
        Child::from(config_map("page", "hub's own")),
    ];
    let related = vec![Child::from(config_map("settings", "gold")).in_cluster("member-a")];
    let parent = note("member-a,member-b");
    let out = testing::reconcile_in_cluster::<Spread>(&parent, "hub", observed, related).unwrap();
    for cluster in ["member-a", "member-b"] {
        let page = out.children.in_cluster(cluster).get::<ConfigMap>("page");
        assert_eq!(page.unwrap().unwrap().data.unwrap()["text"], cluster);
    }
    assert!(
        out.children.get::<ConfigMap>("page").unwrap().is_none(),
        "no page in the hub: a lookup without a cluster reads the parent's"
    );
    assert_eq!(out.children.clusters(), ["member-a", "member-b"]);
    let status = out.status.unwrap();
    assert_eq!(status["cluster"], "hub");
    assert_eq!(status["clusters"], json!(["hub", "member-b"]));
    assert_eq!(status["here"], true);
    assert_eq!(
        status["seen"]["member-a"],
        json!({"page": null, "settings": "gold"})
    );
    assert_eq!(
        status["seen"]["member-b"],
        json!({"page": "old", "settings": null})
    );
}

#[test]
fn a_selection_names_the_cluster_it_reads_in() {
    let selections = testing::select::<Spread>(&note("member-a,hub")).unwrap();
    let clusters: Vec<_> = selections.iter().map(|s| s.cluster.as_deref()).collect();
    assert_eq!(clusters, [Some("member-a"), Some("hub")]);
}

#[test]
fn an_answer_observed_again_keeps_the_cluster_of_each_child() {
    let parent = note("member-a,member-b");
    let first = testing::reconcile_in_cluster::<Spread>(&parent, "hub", vec![], vec![]).unwrap();
    let again =
        testing::reconcile_in_cluster::<Spread>(&parent, "hub", first.as_observed(), vec![])
            .unwrap();
    assert_eq!(again.children, first.children);
    assert_eq!(
        again.status.unwrap()["seen"]["member-b"]["page"],
        "member-b"
    );
}
