use kube::api::{ApiResource, GroupVersionKind};

use super::*;
use crate::runtime::QueueConfig;

fn config_map(rv: &str) -> DynamicObject {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
    let mut obj = DynamicObject::new("x", &ar).within("default");
    obj.metadata.resource_version = Some(rv.into());
    obj
}

fn parent() -> ObjectKey {
    ObjectKey::new("default", "parent")
}

/// A queue whose parent key has a busy streak of 2 (threshold 5).
fn busy_queue() -> Arc<Queue> {
    let queue = Arc::new(Queue::new(QueueConfig {
        hot_loop_threshold: 5,
        ..QueueConfig::default()
    }));
    queue.guard(&parent(), true);
    queue.guard(&parent(), true);
    queue
}

fn cached(obj: &DynamicObject) -> CachedObject {
    CachedObject::from_object(obj).unwrap_or_else(|e| panic!("{e}"))
}

fn event(echoes: &Echoes, queue: &Arc<Queue>, obj: &DynamicObject) -> Cause {
    echoes.enqueue(queue, parent(), "ConfigMap", &cached(obj), false)
}

#[test]
fn the_echo_of_a_write_that_returned_first_is_an_echo_and_only_once() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote("ConfigMap", &config_map("7"));
    assert_eq!(event(&echoes, &queue, &config_map("7")), Cause::Echo);
    assert_eq!(echoes.remembered(), 0, "consumed by its echo");
    assert_eq!(event(&echoes, &queue, &config_map("7")), Cause::Outside);
    assert_eq!(
        echoes.enqueue(&queue, parent(), "Secret", &cached(&config_map("7")), false),
        Cause::Outside,
        "per kind"
    );
}

fn key() -> ObjectKey {
    ObjectKey::new("default", "x")
}

#[test]
fn the_last_write_is_handed_back_only_for_the_version_it_was_made_against() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote_over("ConfigMap", Some("6"), &config_map("7"));
    let rv = |o: Option<DynamicObject>| o.and_then(|o| o.metadata.resource_version);
    assert_eq!(
        rv(echoes.unseen("ConfigMap", &key(), Some("6"))).as_deref(),
        Some("7")
    );
    assert!(
        echoes.unseen("ConfigMap", &key(), Some("7")).is_none(),
        "the cache shows it"
    );
    assert!(
        echoes.unseen("ConfigMap", &key(), Some("8")).is_none(),
        "a later change"
    );
    assert!(
        echoes.unseen("Secret", &key(), Some("6")).is_none(),
        "per kind"
    );
    assert_eq!(event(&echoes, &queue, &config_map("7")), Cause::Echo);
    assert_eq!(
        rv(echoes.unseen("ConfigMap", &key(), Some("6"))).as_deref(),
        Some("7"),
        "a reconcile may still hold the copy from before the echo"
    );
}

#[test]
fn the_last_write_is_kept_packed_and_handed_back_whole() {
    let echoes = Echoes::default();
    let mut written = config_map("7");
    let data: serde_json::Map<String, serde_json::Value> = (0..200)
        .map(|i| {
            (
                format!("page-{i}"),
                format!("<h1>Blog post {i}</h1>").into(),
            )
        })
        .collect();
    written.data = serde_json::json!({ "data": data });
    let json = serde_json::to_string(&written).unwrap_or_else(|e| panic!("{e}"));
    echoes.wrote_over("ConfigMap", Some("6"), &written);
    let kept = echoes.kept_bytes();
    assert!(
        kept > 0 && kept < json.len() / 2,
        "{kept} bytes kept for {} bytes of JSON",
        json.len()
    );
    let back = echoes.unseen("ConfigMap", &key(), Some("6"));
    assert_eq!(back.map(|o| o.data), Some(written.data));
}

#[test]
fn an_applied_manifest_is_kept_as_its_digest_and_matches_only_itself() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    let manifest = |page: &str| serde_json::json!({ "data": { "index.html": page } });
    echoes.applied(
        "ConfigMap",
        Some("6"),
        &config_map("7"),
        &manifest("<h1>one</h1>"),
    );
    assert_eq!(echoes.kept_bytes(), 32, "a digest, not the object");
    assert!(echoes.applied_unseen("ConfigMap", &key(), Some("6"), &manifest("<h1>one</h1>")));
    assert!(
        !echoes.applied_unseen("ConfigMap", &key(), Some("6"), &manifest("<h1>two</h1>")),
        "another manifest is written"
    );
    assert!(
        !echoes.applied_unseen("ConfigMap", &key(), Some("7"), &manifest("<h1>one</h1>")),
        "the cache shows the write: compared with the cache"
    );
    assert!(
        echoes.unseen("ConfigMap", &key(), Some("6")).is_none(),
        "no object is kept to hand back"
    );
    assert_eq!(event(&echoes, &queue, &config_map("7")), Cause::Echo);
    assert!(
        echoes.applied_unseen("ConfigMap", &key(), Some("6"), &manifest("<h1>one</h1>")),
        "a reconcile may still hold the copy from before the echo"
    );
}

#[test]
fn a_created_manifest_matches_while_the_cache_holds_no_object() {
    let echoes = Echoes::default();
    let manifest = serde_json::json!({ "data": { "a": "b" } });
    echoes.applied("ConfigMap", None, &config_map("3"), &manifest);
    assert!(echoes.applied_unseen("ConfigMap", &key(), None, &manifest));
    assert!(!echoes.applied_unseen("ConfigMap", &key(), Some("3"), &manifest));
}

#[test]
fn a_create_is_handed_back_while_the_cache_holds_no_object() {
    let echoes = Echoes::default();
    echoes.wrote_over("ConfigMap", None, &config_map("3"));
    assert!(echoes.unseen("ConfigMap", &key(), None).is_some());
    assert!(echoes.unseen("ConfigMap", &key(), Some("3")).is_none());
}

#[test]
fn a_deletion_forgets_the_last_write() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote_over("ConfigMap", None, &config_map("3"));
    echoes.enqueue(
        &queue,
        parent(),
        "ConfigMap",
        &cached(&config_map("4")),
        true,
    );
    assert!(echoes.unseen("ConfigMap", &key(), None).is_none());
}

#[test]
fn the_echo_of_a_write_that_returned_first_does_not_reset_the_streak() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote("ConfigMap", &config_map("7"));
    event(&echoes, &queue, &config_map("7"));
    assert_eq!(queue.guard(&parent(), true).streak, 3);
}

#[test]
fn the_echo_that_arrives_before_its_write_returns_does_not_reset_the_streak() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    let cause = event(&echoes, &queue, &config_map("7"));
    assert_eq!(cause, Cause::Outside, "not yet known as an echo");
    echoes.wrote("ConfigMap", &config_map("7"));
    assert_eq!(echoes.remembered(), 0, "matched and forgotten");
    assert_eq!(
        queue.guard(&parent(), true).streak,
        3,
        "reclassified as an echo"
    );
}

#[test]
fn an_outside_change_with_another_resource_version_still_resets_the_streak() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote("ConfigMap", &config_map("7"));
    assert_eq!(event(&echoes, &queue, &config_map("8")), Cause::Outside);
    assert_eq!(queue.guard(&parent(), true).streak, 1);

    let (echoes, queue) = (Echoes::default(), busy_queue());
    event(&echoes, &queue, &config_map("8"));
    echoes.wrote("ConfigMap", &config_map("9"));
    assert_eq!(
        queue.guard(&parent(), true).streak,
        1,
        "event first, other write"
    );
}

#[test]
fn several_writes_in_flight_are_each_recognised() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote("ConfigMap", &config_map("7"));
    echoes.wrote("ConfigMap", &config_map("8"));
    assert_eq!(event(&echoes, &queue, &config_map("7")), Cause::Echo);
    assert_eq!(event(&echoes, &queue, &config_map("8")), Cause::Echo);
}

#[test]
fn weirs_own_delete_is_an_echo_and_clears_the_object() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    let obj = config_map("7");
    echoes.wrote("ConfigMap", &obj);
    echoes.deleted("ConfigMap", &key_of(&obj));
    let cause = echoes.enqueue(&queue, parent(), "ConfigMap", &cached(&obj), true);
    assert_eq!(cause, Cause::Echo);
    assert_eq!(echoes.remembered(), 0);
}

#[test]
fn a_delete_by_someone_else_clears_what_was_remembered_of_the_object() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    echoes.wrote("ConfigMap", &config_map("7"));
    event(&echoes, &queue, &config_map("6"));
    let cause = echoes.enqueue(
        &queue,
        parent(),
        "ConfigMap",
        &cached(&config_map("9")),
        true,
    );
    assert_eq!(cause, Cause::Outside);
    assert_eq!(echoes.remembered(), 1, "only the unmatched delete");
    assert_eq!(event(&echoes, &queue, &config_map("7")), Cause::Outside);
}

#[test]
fn remembered_writes_and_events_expire() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    let t0 = Instant::now();
    echoes.record(
        "ConfigMap",
        &ObjectKey::new("default", "a"),
        Change::Version("1".into()),
        t0,
    );
    echoes.observe(
        &queue,
        parent(),
        "ConfigMap",
        &cached(&config_map("2")),
        false,
        t0,
    );
    assert_eq!(echoes.remembered(), 2);
    let later = t0 + EVENT_TTL;
    echoes.record(
        "ConfigMap",
        &ObjectKey::new("default", "b"),
        Change::Deleted,
        later,
    );
    assert_eq!(
        echoes.remembered(),
        2,
        "the event expired, the write not yet"
    );
    let much_later = later + WRITE_TTL;
    echoes.record(
        "ConfigMap",
        &ObjectKey::new("default", "c"),
        Change::Deleted,
        much_later,
    );
    assert_eq!(echoes.remembered(), 1, "only the newest write is left");
}

#[test]
fn the_memory_of_one_object_is_bounded() {
    let (echoes, queue) = (Echoes::default(), busy_queue());
    for rv in 0..100 {
        echoes.wrote("ConfigMap", &config_map(&format!("w{rv}")));
        event(&echoes, &queue, &config_map(&format!("e{rv}")));
    }
    assert_eq!(echoes.remembered(), 2 * PER_OBJECT);
}

#[test]
fn the_map_shrinks_once_what_a_convergence_filled_has_expired() {
    let echoes = Echoes::default();
    let t0 = Instant::now();
    for i in 0..2000 {
        let key = ObjectKey::new("default", &format!("child-{i}"));
        echoes.record("ConfigMap", &key, Change::Version("1".into()), t0);
    }
    let filled = echoes.capacity();
    assert!(filled >= 2000, "{filled}");
    let key = ObjectKey::new("default", "late");
    echoes.record("ConfigMap", &key, Change::Deleted, t0 + WRITE_TTL);
    assert_eq!(echoes.remembered(), 1);
    assert!(
        echoes.capacity() < filled / 4,
        "{} of {filled}",
        echoes.capacity()
    );
}

#[test]
fn a_lookup_sweeps_what_expired_on_a_quiet_host() {
    let echoes = Echoes::default();
    echoes.wrote_over("ConfigMap", Some("6"), &config_map("7"));
    echoes.wrote("ConfigMap", &config_map("8"));
    assert_eq!(echoes.remembered(), 2);
    let later = Instant::now() + WRITE_TTL + SWEEP_EVERY;
    // Any lookup, for any object, as every reconcile makes one.
    assert!(echoes.unseen_at("Secret", &key(), None, later).is_none());
    assert_eq!(echoes.remembered(), 0);
    assert_eq!(echoes.kept_bytes(), 0);
}

#[test]
fn objects_of_another_kind_namespace_or_name_have_slots_of_their_own() {
    let echoes = Echoes::default();
    let t0 = Instant::now();
    let objects = [
        ("ConfigMap", "default", "a"),
        ("Secret", "default", "a"),
        ("ConfigMap", "other", "a"),
        ("ConfigMap", "ab", "c"),
        ("ConfigMap", "a", "bc"),
    ];
    for (kind, namespace, name) in objects {
        let key = ObjectKey::new(namespace, name);
        echoes.record(kind, &key, Change::Version("1".into()), t0);
    }
    assert_eq!(echoes.remembered(), objects.len());
}

/// A record is kept per object written, most of them a child's digest: the packed object a
/// status write keeps lives behind a box, so a digest's record is not the size of an object's.
#[test]
fn a_kept_digest_takes_a_record_of_a_few_words_not_an_objects_room() {
    let record = std::mem::size_of::<Last>();
    assert!(
        record <= 96,
        "a last write's record takes {record} bytes; a packed object takes {}",
        std::mem::size_of::<CachedObject>()
    );
}
