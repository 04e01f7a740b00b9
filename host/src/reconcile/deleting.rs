//! ⑤ A parent being deleted: the plugin's cleanup step, whose answer may act like a reconcile's.
//!
//! While the host holds the plugin's finalizer on a deleting parent, each pass calls `finalize`
//! instead of `reconcile`. An answer that carries children or a status (contract 0.3.0) goes
//! through the same judge as a reconcile answer and the same apply and prune: a child a
//! reconcile could not have is refused alike, and nothing is written. The finalizer is released
//! only by an answer that says `finalized`, once its children are written and its status shown
//! (the settle step). An answer that carries neither (every 0.1.0 and 0.2.0 answer) writes
//! nothing: done releases the finalizer at once, not yet asks again later.

use std::sync::Arc;

use kube::api::DynamicObject;

use super::binding::Binding;
use super::error::ReconcileError;
use super::settle::{Applied, Ran};
use super::{Controller, finish_of};
use crate::answer::{self, Judged};
use crate::plugin::{FinalizeResponse, ReconcileResponse};
use crate::runtime::Finish;
use crate::runtime::cache::CachedObject;

/// The cached objects a cleanup step reads: the children as cached (what is pruned), as the
/// plugin sees them (Secrets redacted), and the selected related objects.
pub(super) type Read<'a> = (
    &'a [Arc<CachedObject>],
    &'a [Arc<CachedObject>],
    &'a super::related::Found,
);

impl Controller {
    /// The parent is being deleted: one cleanup step while the plugin's finalizer is held.
    pub(super) async fn finalize(
        &self,
        b: &Binding,
        (parent, cached): (Arc<DynamicObject>, &CachedObject),
        (children, observed, related): Read<'_>,
    ) -> Result<Ran, ReconcileError> {
        let info = b.info();
        let held = parent.metadata.finalizers.as_deref().unwrap_or_default();
        let Some(finalizer) = info.finalizer.clone().filter(|f| held.contains(f)) else {
            // The plugin's cleanup is done (or it has none): its children in member clusters
            // go, then the host's finalizer ([`super::members`]).
            let finish = b.release_members(&parent, cached).await?;
            return Ok(Ran::Finalized(finish));
        };
        let answer = b
            .invoker
            .finalize(
                cached,
                (observed, &b.elsewhere(cached)),
                related,
                &finalizer,
            )
            .await
            .map_err(ReconcileError::Finalize)?;
        let finish = if answer.finalized {
            Finish::Done
        } else {
            finish_of(answer.requeue)
        };
        if !answer.acts() {
            if answer.finalized {
                b.parents.finalizers().remove(&parent, &finalizer).await?;
            }
            return Ok(Ran::Finalized(finish));
        }

        // ⑤ Judged as a reconcile answer is, then written by the same apply and prune.
        let FinalizeResponse {
            children: wanted,
            clusters,
            status,
            finalized,
            requeue,
        } = answer;
        let prunes = wanted.is_some();
        let as_reconcile = ReconcileResponse {
            children: wanted.unwrap_or_default(),
            clusters,
            status,
            requeue,
        };
        let now = answer::now();
        let Judged {
            children: mut desired,
            status,
            ..
        } = self
            .judge(b, &parent, as_reconcile, &now)
            .map_err(|refused| ReconcileError::refused_answer(info, *refused))?;
        // `children: none` with a status: the status is shown, the children are left alone.
        let writes = if prunes {
            self.parts.config.gate.stamp(&mut desired, cached);
            b.write_children((&parent, cached), &desired, children)
                .await?
        } else {
            Vec::new()
        };
        Ok(Ran::Applied(Applied {
            parent,
            writes,
            desired,
            status,
            finish,
            now,
            release: finalized.then_some(finalizer),
        }))
    }
}
