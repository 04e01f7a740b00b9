//! The engaged clusters on `/metrics`: how many, and what each one's cache holds.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

use super::engaged::{ClusterRow, Engaged};

/// Labels naming one engaged cluster.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabels {
    cluster: String,
}

/// The gauges of [`Engaged`], registered with [`crate::metrics::Metrics::collect`]: read from
/// the engaged clusters at each scrape, so a released cluster's series disappear with it.
#[derive(Debug)]
pub struct ClusterGauges {
    engaged: Engaged,
}

impl ClusterGauges {
    /// The gauges of `engaged`.
    pub fn new(engaged: &Engaged) -> Self {
        Self {
            engaged: engaged.clone(),
        }
    }
}

fn gauge(n: usize) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX))
}

/// One gauge family (`name`, `help`) with a series per engaged cluster in `rows`.
fn per_cluster(
    encoder: &mut DescriptorEncoder,
    (name, help): (&str, &str),
    rows: &[ClusterRow],
    value: impl Fn(&ClusterRow) -> usize,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, gauge(0).metric_type())?;
    for row in rows {
        let labels = ClusterLabels {
            cluster: row.name.clone(),
        };
        gauge(value(row)).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for ClusterGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows = self.engaged.rows();
        let engaged = gauge(rows.len());
        engaged.encode(encoder.encode_descriptor(
            "clusters_engaged",
            "Member clusters engaged now (each with its own client, watches and cache)",
            None,
            engaged.metric_type(),
        )?)?;
        let refused = gauge(self.engaged.refusals());
        refused.encode(encoder.encode_descriptor(
            "cluster_kubeconfigs_refused",
            "Member kubeconfig files refused since the start (unreadable, malformed, or asking to run a program or read a file)",
            None,
            refused.metric_type(),
        )?)?;
        let rotated = gauge(self.engaged.rotations());
        rotated.encode(encoder.encode_descriptor(
            "cluster_credentials_rotated",
            "Member kubeconfig changes for the same server applied in place since the start (the cluster's watches kept, nothing listed again)",
            None,
            rotated.metric_type(),
        )?)?;
        per_cluster(
            &mut encoder,
            (
                "cluster_cached_objects",
                "Objects cached from an engaged member cluster, all kinds",
            ),
            &rows,
            |row| row.objects,
        )?;
        per_cluster(
            &mut encoder,
            (
                "cluster_cached_bytes",
                "Bytes the objects cached from an engaged member cluster take",
            ),
            &rows,
            |row| row.bytes,
        )?;
        Ok(())
    }
}
