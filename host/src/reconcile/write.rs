//! ⑤ The writes of one judged answer's children, each where it belongs: the parent's cluster through the plugin's applier, member clusters through each member's (`members`).

use std::sync::Arc;

use kube::api::DynamicObject;

use super::Controller;
use super::apply::{ApplyError, Change};
use super::binding::Binding;
use super::error::ReconcileError;
use crate::answer::DesiredChild;
use crate::runtime::cache::CachedObject;

impl Controller {
    /// ⑤ Applies the judged children that differ from the caches and prunes the observed ones
    /// no longer wanted (`observed`: in the parent's cluster; in the members, the marked ones
    /// their caches hold): the same writes for a reconcile's answer and a finalize's.
    pub(super) async fn write_children(
        &self,
        b: &Binding,
        (parent, cached): (&DynamicObject, &CachedObject),
        desired: &mut [DesiredChild],
        observed: &[Arc<CachedObject>],
    ) -> Result<Vec<Change>, ReconcileError> {
        let info = b.info();
        self.parts.config.gate.stamp(desired, cached);
        let home: Vec<&DesiredChild> = desired.iter().filter(|c| c.cluster.is_none()).collect();
        // A name taken between the cache read and the create is refused like one the cache showed.
        let refused = |e| match e {
            ApplyError::Foreign(refusal) => ReconcileError::refused(info, refusal, None),
            e => ReconcileError::Apply(e),
        };
        let mut writes = b.applier.apply(&home).await.map_err(refused)?;
        writes.extend(b.applier.prune(&home, observed, &info.children).await?);
        let elsewhere = b.members.observed(cached);
        let placed = b.members.write(parent, desired, &elsewhere).await;
        writes.extend(placed.map_err(|e| match e {
            ReconcileError::Apply(e) => refused(e),
            e => e,
        })?);
        Ok(writes)
    }
}
