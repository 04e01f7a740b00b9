use super::*;
use serde_json::json;

fn live(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_differing_field_is_named_by_its_path() {
    let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "annotations": {MANIFEST_HASH_ANNOTATION: "aa"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": "nginx:1"}]}}}});
    let same = live(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "annotations": {MANIFEST_HASH_ANNOTATION: "bb"}},
        "spec": {"replicas": 2.0, "paused": false, "template": {"spec": {"containers": [{"image": "nginx:1"}]}}}}));
    assert_eq!(differing_field(&same, &desired), None);
    let mut replicas = same.clone();
    replicas.data["spec"]["replicas"] = json!(5);
    assert_eq!(
        differing_field(&replicas, &desired).as_deref(),
        Some("spec.replicas")
    );
    let mut image = same.clone();
    image.data["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert_eq!(
        differing_field(&image, &desired).as_deref(),
        Some("spec.template.spec.containers[0].image")
    );
    let mut label = same;
    label.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
    let wants_label = {
        let mut d = desired.clone();
        d["metadata"]["labels"] = json!({"a": "c"});
        d
    };
    assert_eq!(
        differing_field(&label, &wants_label).as_deref(),
        Some("metadata.labels.a")
    );
}

fn blog() -> PluginInfo {
    serde_json::from_value(json!({
        "name": "blog", "version": "0.1.0",
        "parent": {"group": "weir.dev", "version": "v1alpha1", "kind": "Blog", "plural": "blogs",
                   "namespaced": true},
        "children": [], "finalizer": null, "crd": null
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The Deployment `hello` as desired (manifest hash `hash`, image `image`) and as live (`live_image`, `live_hash`).
fn deployment((hash, image): (&str, &str), (live_hash, live_image): (&str, &str)) -> DesiredChild {
    let body = |hash: &str, image: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "hello", "namespace": "default",
                "annotations": {MANIFEST_HASH_ANNOTATION: hash}},
            "spec": {"template": {"spec": {"containers": [{"image": image}]}}}})
    };
    DesiredChild {
        kind: serde_json::from_value(json!({"group": "apps", "version": "v1",
            "kind": "Deployment", "plural": "deployments", "namespaced": true}))
        .unwrap_or_else(|e| panic!("{e}")),
        key: ObjectKey::new("default", "hello"),
        manifest: body(hash, image),
        live: Some(Arc::new(live(body(live_hash, live_image)))),
        cluster: None,
    }
}

fn written(feed: &ActivityFeed, child: &DesiredChild) {
    let change = Change::Updated("Deployment".into(), child.key.clone());
    let key = ObjectKey::new("default", "hello");
    feed.wrote(&blog(), &key, &[change], std::slice::from_ref(child));
}

#[test]
fn a_change_back_to_the_manifest_last_applied_is_put_back_whatever_the_live_annotation_says() {
    let feed = ActivityFeed::default();
    let mut rx = feed.subscribe();
    let key = ObjectKey::new("default", "hello");
    let first = deployment(("v1", "nginx:1"), ("v1", "nginx:1"));
    feed.wrote(&blog(), &key, &[], std::slice::from_ref(&first));
    // The Blog asks for another image: the plugin's manifest changed.
    written(&feed, &deployment(("v2", "nginx:2"), ("v1", "nginx:1")));
    // `kubectl rollout undo` brings back the old template and the old revision's annotation.
    written(&feed, &deployment(("v2", "nginx:2"), ("v1", "nginx:1")));
    let lines: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
        .map(|a| a.to_string())
        .collect();
    let field = "(spec.template.spec.containers[0].image) of Blog default/hello";
    assert_eq!(
        lines,
        [
            format!("updated Deployment default/hello {field}"),
            format!("put back Deployment default/hello {field}"),
        ]
    );
}

#[test]
fn a_change_in_a_member_names_the_cluster_and_is_remembered_apart_from_the_same_name_at_home() {
    let feed = ActivityFeed::default();
    let mut rx = feed.subscribe();
    let key = ObjectKey::new("default", "hello");
    let at_home = deployment(("v1", "nginx:1"), ("v1", "nginx:1"));
    let mut there = deployment(("v1", "nginx:1"), ("v1", "nginx:1"));
    there.cluster = Some("member-a".into());
    feed.wrote(&blog(), &key, &[], &[at_home, there]);
    // member-a's child is edited by hand and put back; the one at home is not touched.
    let mut edited = deployment(("v1", "nginx:1"), ("v1", "nginx:2"));
    edited.cluster = Some("member-a".into());
    let change = Change::Updated("Deployment".into(), edited.key.clone());
    let change = Change::InCluster("member-a".into(), Box::new(change));
    assert_eq!(
        change.to_string(),
        "updated Deployment default/hello in member-a"
    );
    feed.wrote(&blog(), &key, &[change], std::slice::from_ref(&edited));
    let got = rx.try_recv().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        got.to_string(),
        "put back Deployment default/hello in member-a (spec.template.spec.containers[0].image) of Blog default/hello"
    );
}

#[test]
fn a_child_the_host_never_applied_is_updated_not_put_back() {
    assert_eq!(drift(None, &json!({})), Write::Updated);
    let manifest = json!({"metadata": {"annotations": {MANIFEST_HASH_ANNOTATION: "aa"}}});
    assert_eq!(drift(Some("aa"), &manifest), Write::PutBack);
    assert_eq!(drift(Some("bb"), &manifest), Write::Updated);
}

#[test]
fn a_feed_nobody_watches_builds_nothing_and_a_watched_one_says_what_changed() {
    let feed = ActivityFeed::default();
    assert_eq!(feed.tx.receiver_count(), 0);
    let mut rx = feed.subscribe();
    let info = blog();
    let key = ObjectKey::new("default", "hello");
    let refused = ErrorAction {
        reason: "Refused",
        report: true,
        finish: crate::runtime::Finish::Failed,
        label: ResultLabel::Refused,
    };
    feed.failed(&info, &key, &refused, "child Secret/x: not declared");
    let got = rx.try_recv().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        got.to_string(),
        "refused blog@0.1.0 for Blog default/hello: child Secret/x: not declared"
    );
}
