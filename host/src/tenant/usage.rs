//! What each tenant namespace uses, for `/metrics`, read at each scrape:
//! - `weir_tenant_reconciles_in_flight{tenant}` and `weir_tenant_reconcile_slots{tenant}`: its
//!   reconciles in flight, against its own bound (`maxConcurrentReconciles`);
//! - `weir_tenant_cached_objects{tenant}`: what its informers hold (its namespace only);
//! - for a tenant whose entry sets `maxCachedObjects`, `weir_tenant_cache_limit{tenant}` (that
//!   cap) and `weir_tenant_cache_refusals_total{tenant}` (the objects its informers left out
//!   because the cap was reached: while it grows, some of its reconciles wait, `CacheLimited`);
//! - `weir_tenant_api_requests_total{tenant}`: the requests its client sent (writes, lists,
//!   watches), which share the host's rate as one flow (`crate::client::for_tenant`);
//! - `weir_tenant_plugin_call_seconds_total{tenant}` and `weir_tenant_calls_waiting_for_a_core{tenant}`:
//!   how long its plugin calls held one of the machine's cores, and its calls waiting for one
//!   now (`super::Cores`).

use std::sync::{Arc, PoisonError, RwLock};

use kube::Client;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::gauge::ConstGauge;
use tokio::sync::Semaphore;

use super::Share;
use crate::client::{Next, Sent, Wrap, WrapLayer, derive, for_tenant};
use crate::runtime::{Cap, Informers};

/// The tenant a series is about.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabels {
    /// The tenant's namespace.
    tenant: String,
}

/// A gauge of every tenant: its name, its help, and how it is read from a tenant's meters.
type Gauge = (&'static str, &'static str, fn(&Row) -> usize);

/// One tenant's meters.
struct Row {
    namespace: String,
    slots: Arc<Semaphore>,
    capacity: usize,
    informers: Arc<Informers>,
    requests: Counter,
    cores: Share,
}

/// Every tenant's meters; clones share them. Registered with
/// [`crate::metrics::Metrics::collect`] before the tenants start, filled as they do.
#[derive(Clone, Default)]
pub struct TenantUsage {
    rows: Arc<RwLock<Vec<Row>>>,
}

impl std::fmt::Debug for TenantUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        let tenants: Vec<&str> = rows.iter().map(|r| r.namespace.as_str()).collect();
        f.debug_struct("TenantUsage")
            .field("tenants", &tenants)
            .finish()
    }
}

/// Counts each request sent through it.
#[derive(Clone)]
struct Counted(Counter);

impl Wrap for Counted {
    fn wrap(&self, request: http::Request<kube::client::Body>, next: Next) -> Sent {
        self.0.inc();
        next.send(request)
    }
}

impl TenantUsage {
    /// The client of tenant `namespace`: its requests are the tenant's flow of `client`'s rate
    /// and are counted in `requests`.
    pub fn client(client: &Client, namespace: &str, requests: &Counter) -> Client {
        derive(&for_tenant(client, namespace))
            .with_layer(&WrapLayer::new(Counted(requests.clone())))
            .build()
    }

    /// Meters tenant `namespace`: its reconcile `slots` (of `capacity`), its `informers`, the
    /// `requests` its client counts and its flow of the machine's `cores`.
    pub fn track(
        &self,
        namespace: &str,
        (slots, capacity): (&Arc<Semaphore>, usize),
        informers: &Arc<Informers>,
        (requests, cores): (&Counter, &Share),
    ) {
        self.rows
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Row {
                namespace: namespace.to_owned(),
                slots: slots.clone(),
                capacity,
                informers: informers.clone(),
                requests: requests.clone(),
                cores: cores.clone(),
            });
    }
}

impl Collector for TenantUsage {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows = self.rows.read().unwrap_or_else(PoisonError::into_inner);
        if rows.is_empty() {
            return Ok(());
        }
        let gauge = |n: usize| ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX));
        let gauges: [Gauge; 4] = [
            (
                "tenant_reconciles_in_flight",
                "Reconciles of the tenant namespace's plugins in flight",
                |r| r.capacity.saturating_sub(r.slots.available_permits()),
            ),
            (
                "tenant_reconcile_slots",
                "Reconciles the tenant namespace's plugins may have in flight at once",
                |r| r.capacity,
            ),
            (
                "tenant_cached_objects",
                "Objects the tenant namespace's informers cache",
                |r| r.informers.cached(),
            ),
            (
                "tenant_calls_waiting_for_a_core",
                "Plugin calls of the tenant namespace waiting for one of the machine's cores",
                |r| r.cores.usage().1,
            ),
        ];
        for (name, help, read) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, gauge(0).metric_type())?;
            for row in rows.iter() {
                let labels = TenantLabels {
                    tenant: row.namespace.clone(),
                };
                gauge(read(row)).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "tenant_api_requests",
            "API requests the tenant namespace's client sent (its plugins' writes, its watches and lists)",
            None,
            ConstCounter::new(0_u64).metric_type(),
        )?;
        for row in rows.iter() {
            let labels = TenantLabels {
                tenant: row.namespace.clone(),
            };
            ConstCounter::new(row.requests.get()).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "tenant_plugin_call_seconds",
            "Seconds the tenant namespace's plugin calls held one of the machine's cores",
            None,
            ConstCounter::new(0.0_f64).metric_type(),
        )?;
        for row in rows.iter() {
            let labels = TenantLabels {
                tenant: row.namespace.clone(),
            };
            let held = row.cores.usage().0.as_secs_f64();
            ConstCounter::new(held).encode(family.encode_family(&labels)?)?;
        }
        encode_caps(&rows, &mut encoder)
    }
}

/// The cap and the refusals of each tenant whose informers have a cap.
fn encode_caps(rows: &[Row], encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let caps: Vec<(TenantLabels, &Cap)> = rows
        .iter()
        .filter_map(|r| {
            let labels = TenantLabels {
                tenant: r.namespace.clone(),
            };
            r.informers.cap().map(|cap| (labels, &**cap))
        })
        .collect();
    if caps.is_empty() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(
        "tenant_cache_limit",
        "Objects the tenant namespace's informers may cache (its maxCachedObjects)",
        None,
        ConstGauge::new(0_i64).metric_type(),
    )?;
    for (labels, cap) in &caps {
        let limit = i64::try_from(cap.limit()).unwrap_or(i64::MAX);
        ConstGauge::new(limit).encode(family.encode_family(labels)?)?;
    }
    let mut family = encoder.encode_descriptor(
        "tenant_cache_refusals",
        "Objects the tenant namespace's informers left out because its cap was reached",
        None,
        ConstCounter::new(0_u64).metric_type(),
    )?;
    for (labels, cap) in &caps {
        ConstCounter::new(cap.refused()).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;
    use prometheus_client::registry::Registry;

    use super::*;
    use crate::metrics::Metrics;

    #[tokio::test]
    async fn each_tenants_slots_in_use_cache_and_requests_are_on_metrics() {
        let client = Client::try_from(kube::Config::new(
            "http://127.0.0.1:9".parse().unwrap_or_default(),
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let usage = TenantUsage::default();
        let mut registry = Registry::with_prefix("weir");
        registry.register_collector(Box::new(usage.clone()));
        let informers = Informers::new(
            client.clone(),
            Some("team-a".into()),
            Arc::new(Metrics::new()),
        );
        let slots = Arc::new(Semaphore::new(4));
        let requests = Counter::default();
        let cores = crate::tenant::Cores::new(2);
        let share = cores.tenant("team-a");
        usage.track("team-a", (&slots, 4), &informers, (&requests, &share));
        drop(share.acquire().await.unwrap_or_else(|e| panic!("{e}")));
        let _running = share.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        let _waiting = {
            let mut call = Box::pin(share.acquire());
            assert!(
                futures::poll!(call.as_mut()).is_pending(),
                "one core of two"
            );
            call
        };
        let capped = Informers::capped(
            client.clone(),
            Some("team-b".into()),
            Arc::new(Metrics::new()),
            None,
            Some(Cap::new("tenant team-b", 10)),
        );
        usage.track(
            "team-b",
            (&slots, 4),
            &capped,
            (&Counter::default(), &cores.tenant("team-b")),
        );
        let _held = slots
            .acquire_many(3)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let tenant = TenantUsage::client(&client, "team-a", &requests);
        // Nothing listens there: the request fails, and is counted all the same.
        let _ = tenant
            .request_text(
                http::Request::get("/api/v1/namespaces")
                    .body(Vec::new())
                    .unwrap_or_default(),
            )
            .await;
        let mut text = String::new();
        encode(&mut text, &registry).unwrap_or_else(|e| panic!("{e}"));
        for line in [
            "weir_tenant_reconciles_in_flight{tenant=\"team-a\"} 3",
            "weir_tenant_reconcile_slots{tenant=\"team-a\"} 4",
            "weir_tenant_cached_objects{tenant=\"team-a\"} 0",
            "weir_tenant_api_requests_total{tenant=\"team-a\"} 1",
            "weir_tenant_cache_limit{tenant=\"team-b\"} 10",
            "weir_tenant_cache_refusals_total{tenant=\"team-b\"} 0",
            "weir_tenant_calls_waiting_for_a_core{tenant=\"team-a\"} 1",
            "weir_tenant_plugin_call_seconds_total{tenant=\"team-a\"} ",
        ] {
            assert!(text.contains(line), "{line} is not in\n{text}");
        }
        assert!(
            !text.contains("weir_tenant_cache_limit{tenant=\"team-a\"}"),
            "a tenant with no cap shows none:\n{text}"
        );
    }
}
