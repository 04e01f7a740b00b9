//! Related objects in other namespaces and Secret data, only as far as the policy's entry for
//! the plugin reaches.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::watcher;

use super::tests::{kind, reader};
use super::*;
use crate::answer::Grant;
use crate::plugin::LabelSelector;

/// `reader`, reading ConfigMaps and Secrets.
fn info() -> PluginInfo {
    reader(vec![], vec![kind("ConfigMap", true), kind("Secret", true)])
}

fn by_name(kind: &str, namespace: Option<&str>, name: &str) -> Selection {
    Selection {
        api_version: "v1".into(),
        kind: kind.into(),
        namespace: namespace.map(str::to_owned),
        cluster: None,
        selector: Selector::Name(name.into()),
    }
}

/// The namespaces `team-a` (labelled `share=yes`) and `team-b`, in a store as the host caches them.
fn namespaces() -> Arc<Store> {
    let store = Store::new(kind("Namespace", false));
    store.index_labels();
    store.apply(watcher::Event::Init);
    for (name, labels) in [("team-a", vec![("share", "yes")]), ("team-b", vec![])] {
        let mut ns = DynamicObject::new(name, &kind("Namespace", false).api_resource());
        ns.metadata.labels = Some(
            labels
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        );
        store.apply(watcher::Event::InitApply(
            CachedObject::from_object(&ns).unwrap(),
        ));
    }
    store.apply(watcher::Event::InitDone);
    Arc::new(store)
}

fn reach(grant: Grant) -> Reach {
    Reach {
        grant: Some(grant),
        namespaces: Some(namespaces()),
    }
}

fn selecting() -> Grant {
    Grant {
        namespace_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("share".into(), "yes".into())]),
            match_expressions: vec![],
        }),
        ..Grant::default()
    }
}

#[test]
fn a_namespace_the_entry_selects_is_read_and_another_is_refused_in_the_entrys_words() {
    let reach = reach(selecting());
    let widened = reach.namespaces();
    let theirs = by_name("ConfigMap", Some("team-a"), "theme");
    let checked = check(&info(), Some("home"), &[theirs], widened, None).unwrap();
    assert_eq!(checked[0].pick.namespace.as_deref(), Some("team-a"));
    let other = by_name("ConfigMap", Some("team-b"), "theme");
    let e = check(&info(), Some("home"), &[other], widened, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"selection #0 reads ConfigMap in namespace "team-b", which the policy's entry for this plugin does not allow"#
    );
}

#[test]
fn without_an_entry_the_same_selection_is_refused_with_the_usual_message() {
    let theirs = by_name("ConfigMap", Some("team-a"), "theme");
    let e = check(
        &info(),
        Some("home"),
        &[theirs],
        Reach::default().namespaces(),
        None,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"selection #0 reads ConfigMap in namespace "team-a"; related objects are read in the parent's namespace "home" only"#
    );
}

#[test]
fn a_cluster_scoped_parents_selection_without_a_namespace_reads_every_namespace_of_the_entry() {
    let mut grant = selecting();
    grant.namespaces = vec!["named".into()];
    let reach = reach(grant);
    let all = by_name("ConfigMap", None, "theme");
    let checked = check(&info(), None, &[all], reach.namespaces(), None).unwrap();
    let read: Vec<_> = checked.iter().map(|c| c.pick.namespace.clone()).collect();
    assert_eq!(read, [Some("named".into()), Some("team-a".into())]);
}

fn secret(ns: &str, name: &str) -> CachedObject {
    let secret: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": {"token": "c2VjcmV0"},
    }))
    .unwrap();
    CachedObject::from_object(&secret).unwrap()
}

fn secrets_read_under(reach: Reach) -> Vec<Arc<CachedObject>> {
    let store = Arc::new(Store::new(kind("Secret", true)));
    store.apply(watcher::Event::Apply(secret("home", "creds")));
    let secrets = RelatedKind {
        kind: kind("Secret", true),
        index: Arc::new(KindIndex::default()),
        store,
        members: None,
    };
    let config_maps = RelatedKind {
        kind: kind("ConfigMap", true),
        index: Arc::new(KindIndex::default()),
        store: Arc::new(Store::new(kind("ConfigMap", true))),
        members: None,
    };
    let related = Related::new(vec![config_maps, secrets]).reaching(reach);
    let parent = ObjectKey::new("home", "r");
    related
        .select(&info(), &parent, &[by_name("Secret", None, "creds")])
        .unwrap()
        .home
}

#[test]
fn related_secrets_come_with_their_data_only_for_a_plugin_the_entry_says_so_of() {
    let data = |o: &Arc<CachedObject>| o.decode().unwrap().data.get("data").cloned();
    let redacted = secrets_read_under(Reach::default());
    assert_eq!(data(&redacted[0]), None, "no entry: no data");
    let other = Grant {
        namespaces: vec!["team-a".into()],
        ..Grant::default()
    };
    let redacted = secrets_read_under(reach(other));
    assert_eq!(
        data(&redacted[0]),
        None,
        "an entry without secretData: no data"
    );
    let granted = Grant {
        secret_data: true,
        ..Grant::default()
    };
    let whole = secrets_read_under(reach(granted));
    assert_eq!(
        data(&whole[0]),
        Some(serde_json::json!({"token": "c2VjcmV0"}))
    );
}
