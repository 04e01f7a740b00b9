//! A component of any contract version behind one interface: instantiate it, call its exports.
//!
//! The sandbox calls a [`Guest`] without caring which `weir:reconciler` version it was built
//! against: requests are converted to that version's types, answers back to the host's, a
//! 0.1.0 guest, which has no `select-related`, selects nothing, a finalize answer older
//! than 0.3.0 carries no children and no status, and a guest older than 0.4.0 is given only
//! what is in its parent's cluster.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::bindings::{RawAnswer, RawError, RawFinalize, v1, v2, v3, v4};
use super::selection::Selection;
use super::store::State;
use super::types::{Contract, FinalizeRequest, PluginInfo, ReconcileRequest};

/// A component linked once, ready to be instantiated per call.
pub(super) enum Pre {
    /// Built against 0.1.0.
    V1(v1::ReconcilerPre<State>),
    /// Built against 0.2.0.
    V2(v2::ReconcilerPre<State>),
    /// Built against 0.3.0.
    V3(v3::ReconcilerPre<State>),
    /// Built against 0.4.0.
    V4(v4::ReconcilerPre<State>),
}

/// One live instance.
pub(super) enum Guest {
    /// Built against 0.1.0.
    V1(v1::Reconciler),
    /// Built against 0.2.0.
    V2(v2::Reconciler),
    /// Built against 0.3.0.
    V3(v3::Reconciler),
    /// Built against 0.4.0.
    V4(v4::Reconciler),
}

impl Pre {
    /// Checks the linked component exports `contract`'s world.
    pub(super) fn new(contract: Contract, pre: InstancePre<State>) -> wasmtime::Result<Self> {
        Ok(match contract {
            Contract::V0_1 => Pre::V1(v1::ReconcilerPre::new(pre)?),
            Contract::V0_2 => Pre::V2(v2::ReconcilerPre::new(pre)?),
            Contract::V0_3 => Pre::V3(v3::ReconcilerPre::new(pre)?),
            Contract::V0_4 => Pre::V4(v4::ReconcilerPre::new(pre)?),
        })
    }

    /// The version the component was built against.
    pub(super) fn contract(&self) -> Contract {
        match self {
            Pre::V1(_) => Contract::V0_1,
            Pre::V2(_) => Contract::V0_2,
            Pre::V3(_) => Contract::V0_3,
            Pre::V4(_) => Contract::V0_4,
        }
    }

    /// A fresh instance in `store`.
    pub(super) async fn instantiate(&self, store: &mut Store<State>) -> wasmtime::Result<Guest> {
        Ok(match self {
            Pre::V1(pre) => Guest::V1(pre.instantiate_async(store).await?),
            Pre::V2(pre) => Guest::V2(pre.instantiate_async(store).await?),
            Pre::V3(pre) => Guest::V3(pre.instantiate_async(store).await?),
            Pre::V4(pre) => Guest::V4(pre.instantiate_async(store).await?),
        })
    }
}

impl Guest {
    /// `describe`.
    pub(super) async fn describe(&self, store: &mut Store<State>) -> wasmtime::Result<PluginInfo> {
        Ok(match self {
            Guest::V1(g) => g.call_describe(store).await?.into(),
            Guest::V2(g) => g.call_describe(store).await?.into(),
            Guest::V3(g) => g.call_describe(store).await?.into(),
            Guest::V4(g) => g.call_describe(store).await?.into(),
        })
    }

    /// The `select-related` export; a 0.1.0 guest selects nothing.
    pub(super) async fn select(
        &self,
        store: &mut Store<State>,
        parent: &str,
    ) -> wasmtime::Result<Result<Vec<Selection>, RawError>> {
        Ok(match self {
            Guest::V1(_) => Ok(Vec::new()),
            Guest::V2(g) => g
                .call_select_related(store, parent)
                .await?
                .map(|list| list.into_iter().map(Into::into).collect())
                .map_err(Into::into),
            Guest::V3(g) => g
                .call_select_related(store, parent)
                .await?
                .map(|list| list.into_iter().map(Into::into).collect())
                .map_err(Into::into),
            Guest::V4(g) => g
                .call_select_related(store, parent)
                .await?
                .map(|list| list.into_iter().map(Into::into).collect())
                .map_err(Into::into),
        })
    }

    /// `reconcile`.
    pub(super) async fn reconcile(
        &self,
        store: &mut Store<State>,
        req: &ReconcileRequest,
    ) -> wasmtime::Result<Result<RawAnswer, RawError>> {
        Ok(match self {
            Guest::V1(g) => {
                let req = v1::ReconcileRequest::from(req.clone());
                g.call_reconcile(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
            Guest::V2(g) => {
                let req = v2::ReconcileRequest::from(req.clone());
                g.call_reconcile(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
            Guest::V3(g) => {
                let req = v3::ReconcileRequest::from(req.clone());
                g.call_reconcile(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
            Guest::V4(g) => {
                let req = v4::ReconcileRequest::from(req.clone());
                g.call_reconcile(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
        })
    }

    /// `finalize`.
    pub(super) async fn finalize(
        &self,
        store: &mut Store<State>,
        req: &FinalizeRequest,
    ) -> wasmtime::Result<Result<RawFinalize, RawError>> {
        Ok(match self {
            Guest::V1(g) => {
                let req = v1::FinalizeRequest::from(req.clone());
                g.call_finalize(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
            Guest::V2(g) => {
                let req = v2::FinalizeRequest::from(req.clone());
                g.call_finalize(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
            Guest::V3(g) => {
                let req = v3::FinalizeRequest::from(req.clone());
                g.call_finalize(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
            Guest::V4(g) => {
                let req = v4::FinalizeRequest::from(req.clone());
                g.call_finalize(store, &req)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
        })
    }
}
