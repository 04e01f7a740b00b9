//! Tenant plugins: a team's own plugin (a namespaced `TenantPlugin`), served by the same host
//! but held by the host to the team's namespace.
//!
//! What confines a tenant plugin is the host, never the plugin's claims:
//! 1. admission (`crate::policy::admit_tenant`): the namespace is a tenant's, the parent kind
//!    is granted to it and installed, nothing it declares is cluster-scoped, no widened grant;
//! 2. the source (`crate::hotload::ClusterLoader::start_tenant`): one per tenant namespace,
//!    watching TenantPlugins there only, fetching nothing from another namespace (a pull Secret
//!    or a ConfigMap named elsewhere is refused); a TenantPlugin of any other namespace is only
//!    refused in its status ([`refuse_strays`]);
//! 3. its controllers (`crate::manager`): their own informer registry, every watch in the
//!    namespace only, and the [`Confined`] gate, which admits no parent elsewhere; their answers
//!    are judged with no grant but the namespace's Secret data (`crate::policy::Tenant::validation`),
//!    so children and related objects stay in the parent's namespace.
//!
//! Each tenant namespace has its own controllers, so two teams may serve the same kind, each in
//! its own namespace, with different plugins. The host's own controllers leave a kind granted to
//! a tenant namespace to that tenant there ([`Ceded`]): a cluster `Plugin` of the same kind
//! reconciles it everywhere else.
//!
//! Each tenant has fair shares of the host: reconcile and call slots of its own (its entry's
//! `maxConcurrentReconciles`), one flow of the host's API request rate whatever the number of
//! its plugins (`crate::client::for_tenant`), and its informers' cache apart, bounded by its
//! entry's `maxCachedObjects` when set (`crate::runtime::cap`: beyond it nothing new is cached,
//! and a reconcile that would read a kind left out is held back, `CacheLimited`, until objects
//! are deleted; its TenantPlugins say so too, `crate::cluster::cache_status`); [`TenantUsage`]
//! puts each on `/metrics`. The machine's cores, which every plugin call needs, are given to the
//! tenants in turn, the host's own plugins as one more ([`Cores`]), so a tenant's flood never
//! takes every core.

mod cores;
mod gate;
mod strays;
mod usage;

pub use cores::{Core, Cores, Gone, Share};
pub use gate::{Ceded, Confined};
pub use strays::{NOT_A_TENANT, refuse_strays};
pub use usage::TenantUsage;
