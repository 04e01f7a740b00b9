//! When the members' caches can say that a parent has no child left in them.

use super::*;
use crate::plugin::test_info::namespaced;

/// A client whose watches fail and retry for ever: its stores never hold a first list.
pub(crate) fn unreachable() -> (String, Rotating) {
    let url = "http://127.0.0.1:9";
    let config = kube::Config::new(url.parse().unwrap_or_else(|e| panic!("{e}")));
    let limits = crate::client::ClientLimits::default();
    let client = Rotating::build(config, limits).unwrap_or_else(|e| panic!("{e}"));
    (url.to_owned(), client)
}

#[test]
fn without_a_source_there_is_nothing_to_wait_for() {
    let engaged = Engaged::default();
    assert!(engaged.settled(&[namespaced("apps", "Deployment", "deployments")]));
}

#[tokio::test]
async fn nothing_is_settled_before_the_first_scan_nor_while_a_member_is_not_listed() {
    let deployments = namespaced("apps", "Deployment", "deployments");
    let kinds = [deployments.clone()];
    let engaged = Engaged::default();
    engaged.expect_source();
    assert!(!engaged.settled(&kinds), "the source has not scanned yet");
    engaged.engage("member-a", unreachable(), Labels::new(), &kinds, None);
    engaged.scanned();
    assert!(
        !engaged.settled(&kinds),
        "member-a's Deployments are not listed"
    );
    assert!(
        !engaged.settled(&[namespaced("", "ConfigMap", "configmaps")]),
        "a kind member-a does not watch is not known either"
    );
    assert!(engaged.settled(&[]));
    assert!(engaged.release("member-a"));
    assert!(engaged.settled(&kinds), "no member left to wait for");
}

#[tokio::test]
async fn a_listener_hears_members_engaged_before_and_after_it_until_it_is_dropped() {
    let deployments = namespaced("apps", "Deployment", "deployments");
    let engaged = Engaged::default();
    engaged.engage("member-a", unreachable(), Labels::new(), &[], None);
    let queue = Arc::new(Queue::new(QueueConfig::default()));
    let parents = Arc::new(Store::new(namespaced("weir.dev", "Spread", "spreads")));
    let listening = engaged.listen(
        std::slice::from_ref(&deployments),
        (Route::Parent, queue),
        parents,
    );
    engaged.engage("member-b", unreachable(), Labels::new(), &[], None);
    let heard = |name: &str| {
        let members = engaged.read();
        let member = members
            .get(name)
            .unwrap_or_else(|| panic!("{name} engaged"));
        let watched = member.informers.watched();
        watched.iter().any(|(k, n)| *k == deployments && *n == 1)
    };
    assert!(heard("member-a") && heard("member-b"));
    drop(listening);
    assert!(!heard("member-a") && !heard("member-b"));
}

#[tokio::test]
async fn a_listener_in_the_members_a_route_grants_follows_their_labels() {
    let config_maps = namespaced("", "ConfigMap", "configmaps");
    let prod = Labels::from([("env".to_owned(), "prod".to_owned())]);
    let engaged = Engaged::default();
    engaged.engage("member-a", unreachable(), Labels::new(), &[], None);
    engaged.engage("member-b", unreachable(), prod.clone(), &[], None);
    let queue = Arc::new(Queue::new(QueueConfig::default()));
    let parents = Arc::new(Store::new(namespaced("test.weir.dev", "Mirror", "mirrors")));
    let in_prod: RouteIn = Arc::new(|_: &str, labels: &Labels| {
        (labels.get("env").map(String::as_str) == Some("prod")).then_some(Route::Parent)
    });
    let listening = engaged.listen_in(
        std::slice::from_ref(&config_maps),
        (in_prod, queue),
        parents,
    );
    let heard = |name: &str| listening.store(name, &config_maps).is_some();
    assert!(!heard("member-a") && heard("member-b"));
    assert!(!listening.listed("member-b", &config_maps), "never listed");
    engaged.relabel("member-a", prod);
    engaged.relabel("member-b", Labels::new());
    assert!(heard("member-a") && !heard("member-b"), "relabelled");
    assert!(!heard("member-z"), "not engaged");
    assert_eq!(listening.labels("member-b"), Some(Labels::new()));
}
