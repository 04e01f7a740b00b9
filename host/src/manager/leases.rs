//! The host's Leases and what hangs on them: leadership (the fence of every write but the
//! Leases'), this replica's shard membership, and the informers and controllers they shape.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::Semaphore;

use super::config::{ManagerConfig, ManagerError};
use super::controllers::{Controllers, ControllersView};
use super::runnables::Runnables;
use super::shards::Sharding;
use crate::fence::Fence;
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::policy::Tenant;
use crate::reconcile::ControllerConfig;
use crate::reconcile::gate::{Gate, Whole};
use crate::reconcile::invoke::CallSlots;
use crate::rollout::{PhaseStore, Resume};
use crate::runtime::{Cap, Informers};
use crate::shard::metrics::ShardMetrics;
use crate::tenant::{Ceded, Confined, Cores, Share};

/// Leadership and shard membership, held from the host's start to its stop.
pub(super) struct Leases {
    /// The leader Lease (`None`: the only replica).
    leadership: Option<Leadership>,
    /// This replica's shard Lease, when sharded.
    sharding: Option<Sharding>,
    /// One gate for every write but the Leases': the leader Lease's fence (always open for the
    /// only replica).
    pub(super) gate: Fence,
    /// The machine's cores: with tenants, each plugin call takes one in its tenant's turn (the
    /// host's own plugins one more flow); without, no call takes one.
    cores: Cores,
}

impl Leases {
    /// Takes part in leader election and, sharded, holds this replica's shard Lease.
    pub(super) async fn join(
        client: &Client,
        config: &ManagerConfig,
        shard: ShardMetrics,
    ) -> Result<Self, ManagerError> {
        let leadership = match &config.leader {
            Some(lc) => Some(Leadership::start(client.clone(), lc).await?),
            None => None,
        };
        let sharding = Sharding::join(client, config.shard.as_ref(), shard).await?;
        let gate = leadership
            .as_ref()
            .map_or_else(Fence::always, Leadership::fence);
        Ok(Self {
            leadership,
            sharding,
            gate,
            cores: Cores::of_machine(),
        })
    }

    /// The informer registry, narrowed to this replica's share when sharded.
    pub(super) fn informers(
        &self,
        client: &Client,
        config: &ManagerConfig,
        metrics: &Arc<Metrics>,
    ) -> Arc<Informers> {
        let narrowing = self.sharding.as_ref().map(|s| s.narrowing(client));
        let namespace = config.controller.namespace.clone();
        Informers::narrowed(client.clone(), namespace, metrics.clone(), narrowing)
    }

    /// The controllers, none running yet: their tuning is the host's, with its policy, its bound
    /// on reconciles in flight and the gate of its sharding (every parent when not sharded),
    /// leaving each tenant namespace's granted kinds to it (`crate::tenant::Ceded`); their
    /// writes go through the shard Lease's fence when sharded, else the leader's.
    pub(super) fn controllers(
        &self,
        client: &Client,
        informers: &Arc<Informers>,
        config: &ManagerConfig,
        metrics: &Arc<Metrics>,
        store: &PhaseStore,
    ) -> Controllers {
        let mut controller = self.controller_config(config);
        if !config.policy.tenants.is_empty() {
            let host = controller.gate.clone();
            controller.gate = Arc::new(Ceded::new(&config.policy.tenants, host));
        }
        let calls = CallSlots::new(config.max_concurrent_calls)
            .with_cores((!config.policy.tenants.is_empty()).then(|| self.cores.host()));
        self.controllers_with(
            client,
            informers,
            config,
            (controller, calls),
            metrics,
            store,
        )
    }

    /// Tenant namespace `namespace`'s flow of the machine's cores.
    pub(super) fn tenant_cores(&self, namespace: &str) -> Share {
        self.cores.tenant(namespace)
    }

    /// The informer registry of tenant namespace `namespace`: every watch in that namespace
    /// only (narrowed to this replica's share when sharded, as the host's), its stores holding
    /// at most `cap`'s objects together (the entry's `maxCachedObjects`).
    pub(super) fn tenant_informers(
        &self,
        client: &Client,
        namespace: &str,
        cap: Option<Arc<Cap>>,
        metrics: &Arc<Metrics>,
    ) -> Arc<Informers> {
        let narrowing = self.sharding.as_ref().map(|s| s.narrowing(client));
        let namespace = Some(namespace.to_owned());
        Informers::capped(client.clone(), namespace, metrics.clone(), narrowing, cap)
    }

    /// The controllers of tenant namespace `namespace`, none running yet: as the host's, but
    /// reconciling that namespace only (`crate::tenant::Confined` around the host's gate), their
    /// answers judged with no grant but the namespace's Secret data, and with reconcile `slots`
    /// of their own (as many plugin-call slots, within the host's number), so a tenant's storm
    /// waits for its own slots, not the host's; each call takes a core in the tenant's turn
    /// (`crate::tenant::Cores`).
    pub(super) fn tenant_controllers(
        &self,
        (client, informers): (&Client, &Arc<Informers>),
        (namespace, tenant): (&str, &Tenant),
        (config, slots): (&ManagerConfig, &Arc<Semaphore>),
        metrics: &Arc<Metrics>,
        store: &PhaseStore,
    ) -> Controllers {
        let host = self.controller_config(config);
        let controller = ControllerConfig {
            namespace: Some(namespace.to_owned()),
            validation: tenant.validation(&config.policy),
            gate: Arc::new(Confined::new(namespace, host.gate.clone())),
            reconcile_slots: slots.clone(),
            ..host
        };
        let calls = CallSlots::new(tenant.reconciles().min(config.max_concurrent_calls))
            .with_cores(Some(self.tenant_cores(namespace)));
        self.controllers_with(
            client,
            informers,
            config,
            (controller, calls),
            metrics,
            store,
        )
    }

    /// The host's controller tuning: its policy, its bound on reconciles in flight and the gate
    /// of its sharding (every parent when not sharded).
    fn controller_config(&self, config: &ManagerConfig) -> ControllerConfig {
        ControllerConfig {
            validation: config.policy.validation(),
            reconcile_slots: Arc::new(Semaphore::new(
                config
                    .max_concurrent_reconciles
                    .clamp(1, Semaphore::MAX_PERMITS),
            )),
            gate: self
                .sharding
                .as_ref()
                .map_or_else(|| Arc::new(Whole) as Arc<dyn Gate>, Sharding::gate),
            ..config.controller.clone()
        }
    }

    fn controllers_with(
        &self,
        client: &Client,
        informers: &Arc<Informers>,
        config: &ManagerConfig,
        (controller, calls): (ControllerConfig, CallSlots),
        metrics: &Arc<Metrics>,
        store: &PhaseStore,
    ) -> Controllers {
        let writer = match (&self.sharding, &config.leader) {
            (Some(s), _) => s.writer(),
            (None, Some(lc)) => (self.gate.clone(), lc.abandon_after()),
            (None, None) => (self.gate.clone(), Duration::ZERO),
        };
        // The gate that starts and stops the workers is the one every write passes.
        let controller = ControllerConfig {
            fence: writer.0.clone(),
            ..controller
        };
        Controllers::new(
            client.clone(),
            informers.clone(),
            calls,
            metrics.clone(),
            controller,
            writer,
            Resume::new(store.clone(), config.rollout.resume_within),
        )
    }

    /// Sharded, adds the runnable that moves this replica's share (see [`Sharding::placement`]).
    pub(super) fn placement(
        &self,
        runnables: &mut Runnables,
        client: &Client,
        leader_client: &Client,
        config: &ManagerConfig,
        view: &ControllersView,
    ) {
        if let Some(s) = &self.sharding {
            let namespace = config.controller.namespace.clone();
            let leading = self.gate.clone();
            s.placement(
                runnables,
                client,
                leader_client,
                namespace,
                view.clone(),
                leading,
            );
        }
    }

    /// This replica's member name and the coordinator's view, for `/plugins`, when sharded.
    pub(super) fn listed(&self) -> Option<(String, ShardMetrics)> {
        self.sharding.as_ref().map(Sharding::listed)
    }

    /// Lets go of the Leases: the shard Lease first (its parents move on while the leader Lease
    /// is handed over).
    pub(super) async fn release(self) {
        if let Some(s) = self.sharding {
            s.release().await;
        }
        if let Some(l) = self.leadership {
            l.release().await;
        }
    }
}
