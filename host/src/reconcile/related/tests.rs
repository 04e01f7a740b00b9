use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::watcher;

use super::*;
use crate::answer::refusal_message;
use crate::plugin::{LabelRequirement, LabelSelector, SelectorOperator};

/// A core (`v1`) kind named `kind`, its plural `kind` lowercased with an `s`.
pub(super) fn kind(kind: &str, namespaced: bool) -> ResourceKind {
    ResourceKind {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced,
    }
}

/// The plugin `reader` (parent `Reader.test.weir.dev`), with `children` and `related` kinds.
pub(super) fn reader(children: Vec<ResourceKind>, related: Vec<ResourceKind>) -> PluginInfo {
    PluginInfo {
        name: "reader".into(),
        version: "1.0.0".into(),
        parent: ResourceKind {
            group: "test.weir.dev".into(),
            ..kind("Reader", true)
        },
        children,
        related,
        finalizer: None,
        crd: None,
    }
}

fn info() -> PluginInfo {
    reader(
        vec![kind("ConfigMap", true)],
        vec![kind("ConfigMap", true), kind("Namespace", false)],
    )
}

fn parent(name: &str) -> ObjectKey {
    ObjectKey::new("ns", name)
}

fn config_map(ns: &str, name: &str, labels: &[(&str, &str)]) -> CachedObject {
    CachedObject::from_object(&decoded_config_map(ns, name, labels)).unwrap()
}

fn decoded_config_map(ns: &str, name: &str, labels: &[(&str, &str)]) -> DynamicObject {
    let mut obj = DynamicObject::new(name, &kind("ConfigMap", true).api_resource()).within(ns);
    obj.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    obj
}

fn by_name(name: &str) -> Pick {
    Pick {
        cluster: None,
        namespace: Some("ns".into()),
        selector: Selector::Name(name.into()),
    }
}

fn by_labels(pairs: &[(&str, &str)]) -> Pick {
    Pick {
        cluster: None,
        namespace: Some("ns".into()),
        selector: Selector::Labels(LabelSelector {
            match_labels: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            match_expressions: vec![],
        }),
    }
}

fn selection(kind: &str, namespace: Option<&str>, selector: Selector) -> Selection {
    Selection {
        api_version: "v1".into(),
        kind: kind.into(),
        namespace: namespace.map(str::to_owned),
        cluster: None,
        selector,
    }
}

#[test]
fn a_change_enqueues_the_parents_that_selected_the_object_by_name_and_nobody_else() {
    let index = KindIndex::default();
    index.set(&parent("a"), [by_name("theme-a")]);
    index.set(&parent("b"), [by_name("theme-b")]);
    index.set(&parent("c"), [by_name("theme-a")]);
    let theme_a = config_map("ns", "theme-a", &[]);
    assert_eq!(
        index.parents_of(None, &theme_a),
        vec![parent("a"), parent("c")]
    );
    assert!(
        index
            .parents_of(None, &config_map("ns", "unrelated", &[]))
            .is_empty(),
        "an object nobody selected enqueues nothing"
    );
    assert!(
        index
            .parents_of(None, &config_map("other", "theme-a", &[]))
            .is_empty(),
        "the same name in another namespace is another object"
    );
}

#[test]
fn a_selected_name_that_does_not_exist_yet_wakes_its_parent_when_created() {
    let index = KindIndex::default();
    // The parent selected `late` while it did not exist: nothing else is needed.
    index.set(&parent("a"), [by_name("late")]);
    assert_eq!(
        index.parents_of(None, &config_map("ns", "late", &[])),
        vec![parent("a")]
    );
}

#[test]
fn a_label_selector_hears_an_object_whose_labels_move_in_or_out() {
    let index = KindIndex::default();
    index.set(
        &parent("a"),
        [by_labels(&[("post", "a"), ("kind", "post")])],
    );
    let inside = config_map("ns", "p1", &[("post", "a"), ("kind", "post")]);
    let partial = config_map("ns", "p1", &[("post", "a")]);
    let elsewhere = config_map("ns", "p1", &[("post", "b"), ("kind", "post")]);
    assert_eq!(
        index.parents_of(None, &inside),
        vec![parent("a")],
        "created inside"
    );
    assert!(
        index.parents_of(None, &partial).is_empty(),
        "one pair of two is not a match"
    );
    assert_eq!(
        index.parents_of(Some(&inside), &elsewhere),
        vec![parent("a")],
        "labelled out: the parent must drop it"
    );
    assert_eq!(
        index.parents_of(Some(&elsewhere), &inside),
        vec![parent("a")],
        "labelled in"
    );
    assert!(index.parents_of(Some(&partial), &elsewhere).is_empty());
}

#[test]
fn a_selector_without_match_labels_is_still_found() {
    let index = KindIndex::default();
    let exists = Pick {
        cluster: None,
        namespace: Some("ns".into()),
        selector: Selector::Labels(LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelRequirement {
                key: "post".into(),
                operator: SelectorOperator::Exists,
                values: vec![],
            }],
        }),
    };
    index.set(&parent("a"), [exists]);
    assert_eq!(
        index.parents_of(None, &config_map("ns", "x", &[("post", "1")])),
        vec![parent("a")]
    );
    assert!(
        index
            .parents_of(None, &config_map("ns", "x", &[]))
            .is_empty()
    );
    assert!(
        index
            .parents_of(None, &config_map("other", "x", &[("post", "1")]))
            .is_empty()
    );
}

#[test]
fn a_new_selection_replaces_the_old_one_and_forget_removes_it() {
    let index = KindIndex::default();
    index.set(&parent("a"), [by_name("old"), by_labels(&[("x", "1")])]);
    index.set(&parent("a"), [by_name("new")]);
    assert!(
        index
            .parents_of(None, &config_map("ns", "old", &[("x", "1")]))
            .is_empty()
    );
    assert_eq!(
        index.parents_of(None, &config_map("ns", "new", &[])),
        vec![parent("a")]
    );
    index.forget(&parent("a"));
    assert!(
        index
            .parents_of(None, &config_map("ns", "new", &[]))
            .is_empty()
    );
    assert_eq!(index.parents(), 0);
}

#[test]
fn with_a_thousand_parents_editing_one_theme_enqueues_exactly_one() {
    let index = KindIndex::default();
    for i in 0..1000 {
        let key = parent(&format!("blog-{i}"));
        index.set(
            &key,
            [
                by_name(&format!("theme-{i}")),
                by_labels(&[("blog", &format!("blog-{i}"))]),
            ],
        );
    }
    let theme = config_map("ns", "theme-421", &[]);
    assert_eq!(index.parents_of(None, &theme), vec![parent("blog-421")]);
    let post = config_map("ns", "post-9", &[("blog", "blog-7")]);
    assert_eq!(index.parents_of(None, &post), vec![parent("blog-7")]);
    assert!(
        index
            .parents_of(None, &config_map("ns", "unrelated", &[("app", "x")]))
            .is_empty()
    );
}

#[test]
fn a_selection_of_an_undeclared_kind_is_refused_by_name_or_by_selector() {
    let by_name = selection("Secret", None, Selector::Name("creds".into()));
    let e = check(&info(), Some("ns"), &[by_name], None, None).unwrap_err();
    assert!(matches!(e, Refusal::UndeclaredRelated { .. }), "{e:?}");
    assert_eq!(
        refusal_message(&info(), &e),
        r#"plugin reader: answer refused: selection #0 reads Secret (v1) by name "creds", a kind the plugin did not declare as related"#
    );
    let by_labels = selection("Service", None, Selector::Labels(LabelSelector::default()));
    let e = check(&info(), Some("ns"), &[by_labels], None, None).unwrap_err();
    assert!(
        e.to_string().contains("Service (v1) by label selector"),
        "{e}"
    );
}

#[test]
fn a_selection_in_another_namespace_is_refused() {
    let s = selection("ConfigMap", Some("kube-system"), Selector::Name("x".into()));
    let e = check(&info(), Some("ns"), &[s], None, None).unwrap_err();
    assert!(matches!(e, Refusal::RelatedNamespace { .. }), "{e:?}");
    assert!(e.to_string().contains(r#"namespace "kube-system""#), "{e}");
    let own = selection("ConfigMap", Some("ns"), Selector::Name("x".into()));
    assert_eq!(
        check(&info(), Some("ns"), &[own], None, None).unwrap()[0].pick,
        by_name("x")
    );
}

#[test]
fn a_cluster_scoped_kind_is_read_without_a_namespace_and_refused_with_one() {
    let s = selection("Namespace", None, Selector::Name("ns".into()));
    let checked = check(&info(), Some("ns"), &[s], None, None).unwrap();
    assert_eq!(
        (checked[0].kind, checked[0].pick.namespace.clone()),
        (1, None)
    );
    let s = selection("Namespace", Some("ns"), Selector::Name("ns".into()));
    let e = check(&info(), Some("ns"), &[s], None, None).unwrap_err();
    assert!(matches!(e, Refusal::InvalidSelection { .. }), "{e:?}");
}

#[test]
fn invalid_names_selectors_and_too_many_selections_are_refused() {
    let bad_name = selection("ConfigMap", None, Selector::Name("Not_A_Name".into()));
    assert!(matches!(
        check(&info(), Some("ns"), &[bad_name], None, None),
        Err(Refusal::InvalidSelection { .. })
    ));
    let bad_selector = selection(
        "ConfigMap",
        None,
        Selector::Labels(LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelRequirement {
                key: "k".into(),
                operator: SelectorOperator::In,
                values: vec![],
            }],
        }),
    );
    assert!(matches!(
        check(&info(), Some("ns"), &[bad_selector], None, None),
        Err(Refusal::InvalidSelection { .. })
    ));
    let many: Vec<Selection> = (0..=MAX_SELECTIONS)
        .map(|i| selection("ConfigMap", None, Selector::Name(format!("c{i}"))))
        .collect();
    assert!(matches!(
        check(&info(), Some("ns"), &many, None, None),
        Err(Refusal::TooLarge { .. })
    ));
}

#[test]
fn resolve_returns_the_selected_objects_that_exist_once_each_with_secrets_redacted() {
    let store = Arc::new(Store::new(kind("ConfigMap", true)));
    for obj in [
        config_map("ns", "theme", &[]),
        config_map("ns", "p1", &[("post", "yes")]),
        config_map("ns", "p2", &[("post", "yes")]),
        config_map("other", "p3", &[("post", "yes")]),
    ] {
        store.apply(watcher::Event::Apply(obj));
    }
    let related = Related::new(vec![RelatedKind {
        kind: kind("ConfigMap", true),
        index: Arc::new(KindIndex::default()),
        store,
        members: None,
    }]);
    let checked = check(
        &info(),
        Some("ns"),
        &[
            selection("ConfigMap", None, Selector::Name("theme".into())),
            selection("ConfigMap", None, Selector::Name("missing".into())),
            selection(
                "ConfigMap",
                None,
                Selector::Labels(LabelSelector {
                    match_labels: [("post".to_owned(), "yes".to_owned())].into(),
                    match_expressions: vec![],
                }),
            ),
            selection("ConfigMap", None, Selector::Name("p1".into())),
        ],
        None,
        None,
    )
    .unwrap();
    let names: Vec<String> = related
        .resolve(&checked)
        .home
        .iter()
        .map(|o| o.name().to_owned())
        .collect();
    assert_eq!(names, vec!["theme", "p1", "p2"]);
    related.record(&parent("a"), &checked);
    assert_eq!(
        related.kinds[0]
            .index
            .parents_of(None, &config_map("ns", "missing", &[])),
        vec![parent("a")],
        "the missing one is part of the selection"
    );
}
