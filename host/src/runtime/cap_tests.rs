use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use kube::api::DynamicObject;
use kube::runtime::watcher;

use super::*;
use crate::plugin::ResourceKind;
use crate::runtime::ObjectKey;
use crate::runtime::cache::CachedObject;

fn kind(name: &str) -> ResourceKind {
    ResourceKind {
        group: String::new(),
        version: "v1".into(),
        kind: name.into(),
        plural: format!("{}s", name.to_lowercase()),
        namespaced: true,
    }
}

fn object(kind_name: &str, name: &str, data: &str) -> CachedObject {
    let mut obj = DynamicObject::new(name, &kind(kind_name).api_resource()).within("team-b");
    obj.data = serde_json::json!({ "data": { "v": data } });
    CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
}

fn capped(kind_name: &str, cap: &Arc<Cap>) -> Store {
    Store::new(kind(kind_name)).capped(Some(cap.clone()))
}

/// A full list of `names` (ConfigMaps), as a watch's (re)list brings it.
fn list(store: &Store, names: &[&str]) {
    store.apply(watcher::Event::Init);
    for name in names {
        store.apply(watcher::Event::InitApply(object("ConfigMap", name, "1")));
    }
    store.apply(watcher::Event::InitDone);
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("team-b", name)
}

#[test]
fn a_capped_store_caches_no_new_object_beyond_the_cap_and_says_it_is_short() {
    let cap = Cap::new("tenant team-b", 2);
    let store = capped("ConfigMap", &cap);
    list(&store, &["a", "b", "c"]);
    assert_eq!(store.len(), 2, "the third object is left out");
    assert_eq!((cap.held(), cap.refused()), (2, 1));
    let short = store
        .short()
        .unwrap_or_else(|| panic!("the store is short"));
    assert_eq!(
        short,
        Short {
            owner: "tenant team-b".into(),
            limit: 2,
            held: 2,
            kind: "ConfigMap".into(),
        }
    );
    // A new object from the watch is left out too, and concerns nobody.
    let touched = store.apply(watcher::Event::Apply(object("ConfigMap", "d", "1")));
    assert!(touched.is_none());
    assert_eq!((store.len(), cap.refused()), (2, 2));
}

#[test]
fn a_new_version_of_a_held_object_is_cached_at_the_cap() {
    let cap = Cap::new("tenant team-b", 1);
    let store = capped("ConfigMap", &cap);
    list(&store, &["a"]);
    assert!(store.short().is_none(), "one object fits a cap of one");
    let touched = store.apply(watcher::Event::Apply(object("ConfigMap", "a", "2")));
    assert!(touched.is_some());
    let held = store.get(&key("a")).unwrap_or_else(|| panic!("a is held"));
    let decoded = held.decode().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decoded.data["data"]["v"], "2");
    assert_eq!((cap.held(), cap.refused()), (1, 0));
    assert!(store.short().is_none());
}

#[test]
fn the_stores_of_one_registry_share_its_cap() {
    let cap = Cap::new("tenant team-b", 3);
    let config_maps = capped("ConfigMap", &cap);
    let services = capped("Service", &cap);
    list(&config_maps, &["a", "b"]);
    services.apply(watcher::Event::Init);
    for name in ["s1", "s2"] {
        services.apply(watcher::Event::InitApply(object("Service", name, "1")));
    }
    services.apply(watcher::Event::InitDone);
    assert_eq!((config_maps.len(), services.len(), cap.held()), (2, 1, 3));
    assert!(config_maps.short().is_none(), "every ConfigMap is held");
    assert_eq!(services.short().map(|s| s.kind), Some("Service".into()));
}

#[test]
fn a_deletion_makes_room_and_a_relist_that_fits_makes_the_store_whole_again() {
    let cap = Cap::new("tenant team-b", 2);
    let store = capped("ConfigMap", &cap);
    list(&store, &["a", "b", "c"]);
    assert!(store.short().is_some());
    // A deletion of an object left out gives no place back; one of a held object does.
    store.apply(watcher::Event::Delete(object("ConfigMap", "c", "1")));
    assert_eq!(cap.held(), 2);
    store.apply(watcher::Event::Delete(object("ConfigMap", "a", "1")));
    assert_eq!(cap.held(), 1);
    assert!(store.short().is_some(), "short until a list fits whole");
    // The relist: what was held is kept while it runs, what was left out comes in.
    store.apply(watcher::Event::Init);
    store.apply(watcher::Event::InitApply(object("ConfigMap", "c", "1")));
    assert!(store.get(&key("b")).is_some(), "kept while the list runs");
    store.apply(watcher::Event::InitApply(object("ConfigMap", "b", "1")));
    store.apply(watcher::Event::InitDone);
    assert!(store.short().is_none());
    assert_eq!(store.len(), 2);
    assert_eq!(cap.held(), 2);
}

#[test]
fn a_relist_that_drops_objects_gives_their_places_back() {
    let cap = Cap::new("tenant team-b", 3);
    let store = capped("ConfigMap", &cap);
    list(&store, &["a", "b", "c"]);
    list(&store, &["a"]);
    assert_eq!((store.len(), cap.held()), (1, 1));
}

#[test]
fn a_dropped_store_gives_its_places_back() {
    let cap = Cap::new("tenant team-b", 5);
    let store = capped("ConfigMap", &cap);
    list(&store, &["a", "b", "c"]);
    assert_eq!(cap.held(), 3);
    drop(store);
    assert_eq!(cap.held(), 0);
}

/// A `Service` of that name, for a second store of the registry.
fn service(name: &str) -> CachedObject {
    object("Service", name, "1")
}

#[test]
fn the_fill_says_which_kinds_are_left_out_until_each_store_lists_whole_again() {
    let cap = Cap::new("tenant team-b", 2);
    let mut changes = cap.fill_changes();
    let fill = |left_out: &[&str], listed: bool, held: usize| Fill {
        owner: "tenant team-b".into(),
        limit: 2,
        held,
        left_out: left_out.iter().map(|k| (*k).to_owned()).collect(),
        listed,
    };
    assert_eq!(cap.fill(), fill(&[], false, 0), "no store has listed");
    let config_maps = capped("ConfigMap", &cap);
    let services = capped("Service", &cap);
    assert!(
        changes.has_changed().unwrap_or_default(),
        "stores were made"
    );
    changes.mark_unchanged();
    list(&config_maps, &["a"]);
    assert_eq!(cap.fill(), fill(&[], false, 1), "Services have not listed");
    services.apply(watcher::Event::Init);
    services.apply(watcher::Event::InitApply(service("s1")));
    services.apply(watcher::Event::InitApply(service("s2")));
    assert_eq!(
        cap.fill(),
        fill(&["Service"], false, 2),
        "short while listing"
    );
    services.apply(watcher::Event::InitDone);
    assert_eq!(cap.fill(), fill(&["Service"], true, 2));
    changes.mark_unchanged();
    // A ConfigMap left out too; then one more of each: no news.
    config_maps.apply(watcher::Event::Apply(object("ConfigMap", "b", "1")));
    assert_eq!(cap.fill(), fill(&["ConfigMap", "Service"], true, 2));
    assert!(changes.has_changed().unwrap_or_default());
    changes.mark_unchanged();
    config_maps.apply(watcher::Event::Apply(object("ConfigMap", "c", "1")));
    services.apply(watcher::Event::Apply(service("s3")));
    assert!(
        !changes.has_changed().unwrap_or_default(),
        "a store already short changes nothing"
    );
    // `a` deleted: room, but short until a list fits; then the ConfigMaps list whole.
    config_maps.apply(watcher::Event::Delete(object("ConfigMap", "a", "1")));
    assert_eq!(cap.fill(), fill(&["ConfigMap", "Service"], true, 1));
    assert!(
        !changes.has_changed().unwrap_or_default(),
        "the count is no news"
    );
    list(&config_maps, &["b"]);
    assert_eq!(cap.fill(), fill(&["Service"], true, 2));
    assert!(changes.has_changed().unwrap_or_default());
    // The short store dropped (its plugin removed): nothing is left out.
    drop(services);
    assert_eq!(cap.fill(), fill(&[], true, 1));
}

#[test]
fn a_store_with_no_cap_caches_everything_and_is_never_short() {
    let store = Store::new(kind("ConfigMap"));
    let names: Vec<String> = (0..50).map(|i| format!("cm-{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    list(&store, &names);
    assert_eq!(store.len(), 50);
    assert!(store.short().is_none());
}

/// The API server's ConfigMaps, and a watch of them that lists them each time it starts.
#[derive(Clone, Default)]
struct Server {
    names: Arc<Mutex<Vec<&'static str>>>,
    starts: Arc<AtomicUsize>,
}

impl Server {
    fn watch(
        &self,
        store: &Arc<Store>,
    ) -> impl Fn() -> futures::future::BoxFuture<'static, ()> + use<> {
        let (server, store) = (self.clone(), store.clone());
        move || {
            let (server, store) = (server.clone(), store.clone());
            Box::pin(async move {
                server.starts.fetch_add(1, Ordering::SeqCst);
                let names = server
                    .names
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                list(&store, &names);
                std::future::pending::<()>().await;
            })
        }
    }
}

#[tokio::test]
async fn a_short_store_is_listed_again_once_the_cap_has_room_and_then_holds_its_whole_kind() {
    let cap = Cap::new("tenant team-b", 2);
    let store = Arc::new(capped("ConfigMap", &cap));
    let server = Server::default();
    *server.names.lock().unwrap_or_else(|p| p.into_inner()) = vec!["a", "b", "c"];
    let task = tokio::spawn(refilling(server.watch(&store), store.clone(), cap.clone()));
    let wait = |what: &'static str, ok: Box<dyn Fn() -> bool + Send>| async move {
        for _ in 0..100 {
            if ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{what}");
    };
    let s = store.clone();
    wait("the first list", Box::new(move || s.lists() == 1)).await;
    assert!(store.short().is_some());
    // Short with no room: nothing is listed again.
    tokio::time::sleep(REFILL_PAUSE * 2).await;
    assert_eq!(server.starts.load(Ordering::SeqCst), 1);
    // `a` is deleted: its watch event frees a place, and the kind is listed again.
    server
        .names
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|n| *n != "a");
    store.apply(watcher::Event::Delete(object("ConfigMap", "a", "1")));
    let s = store.clone();
    wait(
        "the kind is listed again and fits",
        Box::new(move || s.lists() == 2 && s.short().is_none()),
    )
    .await;
    assert_eq!(server.starts.load(Ordering::SeqCst), 2);
    assert!(
        store.get(&key("c")).is_some(),
        "what was left out is cached"
    );
    assert_eq!((store.len(), cap.held()), (2, 2));
    // Whole again: no more relists.
    tokio::time::sleep(REFILL_PAUSE * 2).await;
    assert_eq!(server.starts.load(Ordering::SeqCst), 2);
    task.abort();
}
