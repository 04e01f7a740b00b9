//! A controller's listening to some kinds in every engaged member: each member, engaged now or later, routes their changes to its queue.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Engaged, Member};
use crate::clusters::Labels;
use crate::plugin::ResourceKind;
use crate::runtime::cache::Store;
use crate::runtime::{Cause, Queue, Route, Scope, Subscription, Target};

/// The route of a listener's events in the member of this name and these labels; `None`: not
/// heard there.
pub type RouteIn = Arc<dyn Fn(&str, &Labels) -> Option<Route> + Send + Sync>;

/// One listener's subscriptions in one member, and the task that enqueues its parents once
/// they hold their first list.
pub(super) struct Heard {
    pub(super) subscriptions: Vec<Subscription>,
    listed: tokio::task::JoinHandle<()>,
}

impl Drop for Heard {
    fn drop(&mut self) {
        self.listed.abort();
    }
}

/// A controller's interest in some kinds in every member ([`Engaged::listen_in`]).
pub(super) struct Listener {
    kinds: Vec<ResourceKind>,
    route: RouteIn,
    queue: Arc<Queue>,
    /// The controller's parents, each enqueued once a member's kinds are listed.
    parents: Arc<Store>,
}

/// A controller's listening to the members; dropping it stops it in every member.
pub struct Listening {
    engaged: Engaged,
    id: u64,
}

impl Listening {
    /// The store of `kind` this listener hears in the engaged member `cluster` (`None`: not
    /// engaged, or not heard there).
    pub fn store(&self, cluster: &str, kind: &ResourceKind) -> Option<Arc<Store>> {
        let members = self.engaged.read();
        let heard = members.get(cluster)?.heard.get(&self.id)?;
        (heard.subscriptions.iter())
            .map(Subscription::store)
            .find(|store| store.kind() == kind)
            .cloned()
    }

    /// Whether this listener hears `kind` in the engaged member `cluster` and its store holds
    /// its first list (or the member does not serve the kind).
    pub fn listed(&self, cluster: &str, kind: &ResourceKind) -> bool {
        self.store(cluster, kind)
            .is_some_and(|s| s.is_synced() || s.is_unserved())
    }

    /// The labels of the engaged member `cluster` (`None` when it is not engaged).
    pub fn labels(&self, cluster: &str) -> Option<Labels> {
        self.engaged.labels(cluster)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let mut members = self.engaged.write();
        for member in members.values_mut() {
            member.heard.remove(&self.id);
        }
        self.engaged.listeners().remove(&self.id);
    }
}

impl Member {
    /// Hears the listener here, or stops, as the member's labels now say: one granted by
    /// labels it has gained starts, one by labels it has lost stops; one already heard and
    /// still granted stays as it is (its store is not listed again).
    pub(super) fn hear_again(&mut self, name: &str, id: u64, listener: &Listener) {
        let wanted = (listener.route)(name, &self.labels).is_some();
        match (wanted, self.heard.contains_key(&id)) {
            (true, false) => self.hear(name, id, listener),
            (false, true) => {
                self.heard.remove(&id);
            }
            _ => {}
        }
    }

    /// Routes the listener's kinds here (the member `name`) to its queue, if it hears this
    /// member, this member's echoes telling the host's own writes apart; once they hold their
    /// first list, every parent of the listener is enqueued (one refused for naming this
    /// cluster before it was engaged is placed, or reads there, now).
    pub(super) fn hear(&mut self, name: &str, id: u64, listener: &Listener) {
        let Some(route) = (listener.route)(name, &self.labels) else {
            return;
        };
        let subscriptions: Vec<Subscription> = listener
            .kinds
            .iter()
            .map(|kind| {
                let target = Target {
                    route: route.clone(),
                    queue: listener.queue.clone(),
                    echoes: self.echoes.clone(),
                };
                let subscription = self.informers.subscribe(kind, Scope::All, target);
                subscription.store().index_labels();
                subscription
            })
            .collect();
        let stores: Vec<Arc<Store>> = subscriptions.iter().map(|s| s.store().clone()).collect();
        let (parents, queue) = (listener.parents.clone(), listener.queue.clone());
        let listed = tokio::spawn(async move {
            for store in stores {
                store.wait_synced().await;
            }
            for key in parents.keys() {
                queue.add(key, Cause::Outside);
            }
        });
        let heard = Heard {
            subscriptions,
            listed,
        };
        self.heard.insert(id, heard);
    }
}

impl Engaged {
    /// Routes a change of an object of `kinds` in every member, engaged now or later, to
    /// `queue` by `route`, until the returned handle is dropped; each member's first list of
    /// them enqueues every parent `parents` holds. Must be called inside the Tokio runtime.
    pub fn listen(
        &self,
        kinds: &[ResourceKind],
        (route, queue): (Route, Arc<Queue>),
        parents: Arc<Store>,
    ) -> Listening {
        let route: RouteIn = Arc::new(move |_: &str, _: &Labels| Some(route.clone()));
        self.listen_in(kinds, (route, queue), parents)
    }

    /// [`Engaged::listen`] in the members `route` gives a route for, each by the route it
    /// gives for that member's name and labels (the members a policy grants a plugin, say; a
    /// related kind's index keyed with the cluster). A member relabelled is heard again or no
    /// longer as its new labels say ([`Engaged::relabel`]).
    pub fn listen_in(
        &self,
        kinds: &[ResourceKind],
        (route, queue): (RouteIn, Arc<Queue>),
        parents: Arc<Store>,
    ) -> Listening {
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed);
        let listener = Arc::new(Listener {
            kinds: kinds.to_vec(),
            route,
            queue,
            parents,
        });
        let mut members = self.write();
        for (name, member) in members.iter_mut() {
            member.hear(name, id, &listener);
        }
        self.listeners().insert(id, listener);
        Listening {
            engaged: self.clone(),
            id,
        }
    }
}
