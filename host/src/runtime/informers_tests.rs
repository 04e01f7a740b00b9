use super::*;
use crate::runtime::QueueConfig;

fn kind(name: &str) -> ResourceKind {
    ResourceKind {
        group: String::new(),
        version: "v1".into(),
        kind: name.into(),
        plural: format!("{}s", name.to_lowercase()),
        namespaced: true,
    }
}

fn target() -> Target {
    Target {
        route: Route::Parent,
        queue: Arc::new(Queue::new(QueueConfig::default())),
        echoes: Arc::new(Echoes::default()),
    }
}

/// A client whose watches fail and retry for ever: the registry's bookkeeping is what is tested.
fn offline_client() -> Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
    Client::try_from(config).expect("a client for a fixed URL")
}

#[tokio::test]
async fn controllers_reading_the_same_kind_share_one_watch_until_the_last_unsubscribes() {
    let informers = Informers::new(offline_client(), None, Arc::new(Metrics::new()));
    let a = informers.subscribe(&kind("ConfigMap"), Scope::Mine, target());
    let b = informers.subscribe(&kind("ConfigMap"), Scope::Mine, target());
    let s = informers.subscribe(&kind("Service"), Scope::Mine, target());
    assert!(Arc::ptr_eq(a.store(), b.store()), "one store per kind");
    let count = |k: &str| {
        informers
            .watched()
            .into_iter()
            .find(|(w, _)| w.kind == k)
            .map(|(_, n)| n)
    };
    assert_eq!(count("ConfigMap"), Some(2));
    assert_eq!(count("Service"), Some(1));
    drop(a);
    assert_eq!(
        count("ConfigMap"),
        Some(1),
        "the other subscriber keeps the watch"
    );
    drop(b);
    assert_eq!(
        count("ConfigMap"),
        None,
        "the last unsubscribe stops the watch"
    );
    assert_eq!(count("Service"), Some(1));
    drop(s);
    assert!(informers.watched().is_empty());
}

#[tokio::test]
async fn a_registry_narrowed_by_labels_keeps_its_part_and_the_unowned_apart_from_the_whole_kind_and_a_whole_one_does_not()
 {
    let metrics = Arc::new(Metrics::new());
    let sharded = Informers::narrowed(
        offline_client(),
        None,
        metrics.clone(),
        Some(Narrowing::Labels {
            mine: "shard.weir.dev/owner=a".into(),
            unowned: "!shard.weir.dev/owner".into(),
        }),
    );
    let share = sharded.subscribe(&kind("ConfigMap"), Scope::Mine, target());
    let all = sharded.subscribe(&kind("ConfigMap"), Scope::All, target());
    let unowned = sharded.subscribe(&kind("ConfigMap"), Scope::Unowned, target());
    assert!(!Arc::ptr_eq(share.store(), all.store()), "two watches");
    assert!(!Arc::ptr_eq(unowned.store(), all.store()), "and a third");
    let mut selectors: Vec<Option<String>> =
        sharded.lock().keys().map(|(_, s)| s.clone()).collect();
    selectors.sort();
    assert_eq!(
        selectors,
        [
            None,
            Some("!shard.weir.dev/owner".into()),
            Some("shard.weir.dev/owner=a".into())
        ],
        "the whole kind, the objects nobody owns, this replica's share"
    );
    let plain = Informers::new(offline_client(), None, metrics);
    let share = plain.subscribe(&kind("ConfigMap"), Scope::Mine, target());
    let all = plain.subscribe(&kind("ConfigMap"), Scope::All, target());
    let unowned = plain.subscribe(&kind("ConfigMap"), Scope::Unowned, target());
    assert!(
        Arc::ptr_eq(share.store(), all.store()) && Arc::ptr_eq(share.store(), unowned.store()),
        "one watch when not sharded"
    );
    assert_eq!(plain.watched(), vec![(kind("ConfigMap"), 3)]);
}

#[tokio::test]
async fn a_parent_target_joining_a_listed_informer_gets_every_cached_key() {
    let informers = Informers::new(offline_client(), None, Arc::new(Metrics::new()));
    let first = informers.subscribe(&kind("Widget"), Scope::Mine, target());
    let mut obj =
        kube::api::DynamicObject::new("w1", &kind("Widget").api_resource()).within("default");
    obj.metadata.resource_version = Some("1".into());
    let obj = CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"));
    first.store().apply(watcher::Event::Init);
    first.store().apply(watcher::Event::InitApply(obj));
    first.store().apply(watcher::Event::InitDone);
    let late = target();
    let queue = late.queue.clone();
    let _second = informers.subscribe(&kind("Widget"), Scope::Mine, late);
    assert_eq!(
        queue.depth(),
        1,
        "the cached parent is enqueued for the late subscriber"
    );
    let change = ObjectKey::new("default", "changed");
    queue.add(change.clone(), Cause::Outside);
    assert_eq!(
        queue.next().await,
        Some(change),
        "as a list: behind a change"
    );
    assert_eq!(queue.next().await, Some(ObjectKey::new("default", "w1")));
}

fn widget(version: &str) -> CachedObject {
    let mut obj =
        kube::api::DynamicObject::new("w1", &kind("Widget").api_resource()).within("default");
    obj.metadata.resource_version = Some(version.into());
    CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_relist_queues_an_unchanged_object_as_a_list_and_a_changed_or_new_one_as_a_change() {
    let (v1, v2) = (widget("1"), widget("2"));
    assert_eq!(list_cause(true, None, &v1), Cause::Listed, "the first list");
    assert_eq!(
        list_cause(false, Some(&v1), &v1),
        Cause::Listed,
        "unchanged"
    );
    assert_eq!(
        list_cause(false, Some(&v1), &v2),
        Cause::Outside,
        "changed meanwhile"
    );
    assert_eq!(
        list_cause(false, None, &v1),
        Cause::Outside,
        "created meanwhile"
    );
}
