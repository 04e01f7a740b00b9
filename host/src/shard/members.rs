//! Membership: each replica holds a Lease of its own; the members are the held, fresh ones.
//!
//! The Lease is `weir-shard-<identity>` in the host's Lease namespace, held and renewed by the
//! same code that holds the leader Lease ([`crate::leader::Leadership`]): only its own replica
//! competes for it, so it is won at once. A replica stopping cleanly releases it (no holder: it
//! stops being a member at once); a killed one stops renewing it and drops out when it expires.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;

use super::ShardConfig;
use crate::leader::LeaderConfig;

/// The prefix of every shard Lease's name.
pub const LEASE_PREFIX: &str = "weir-shard-";

/// The name of `identity`'s shard Lease.
pub fn lease_name(identity: &str) -> String {
    format!("{LEASE_PREFIX}{identity}")
}

/// How this replica holds its own shard Lease: as the leader Lease is held, under another name.
pub fn lease_config(config: &ShardConfig) -> LeaderConfig {
    LeaderConfig {
        lease: lease_name(&config.identity),
        namespace: config.namespace.clone(),
        identity: config.identity.clone(),
        duration_secs: config.duration_secs,
        grace_secs: config.grace_secs,
    }
}

/// The member `lease` stands for at `now`: its holder, if it is a shard Lease held by the
/// identity it is named after and its last renewal has not run out.
pub fn member_of(lease: &Lease, now: SystemTime) -> Option<String> {
    let (identity, until) = held(lease)?;
    (until > now).then(|| identity.to_owned())
}

/// The identity a shard Lease is named after, and until when it holds it as last renewed.
fn held(lease: &Lease) -> Option<(&str, SystemTime)> {
    let identity = lease.metadata.name.as_deref()?.strip_prefix(LEASE_PREFIX)?;
    let spec = lease.spec.as_ref()?;
    if spec.holder_identity.as_deref() != Some(identity) {
        return None;
    }
    let renewed = SystemTime::from(spec.renew_time.as_ref()?.0);
    let secs = u64::try_from(spec.lease_duration_seconds?).ok()?;
    Some((identity, renewed + Duration::from_secs(secs)))
}

/// When the first of the members' Leases among `leases` runs out unless renewed (`None`: no
/// member): a pass then sees a killed member gone without waiting for its next period.
pub fn first_expiry(leases: &[Lease], now: SystemTime) -> Option<SystemTime> {
    leases
        .iter()
        .filter_map(held)
        .map(|(_, until)| until)
        .filter(|until| *until > now)
        .min()
}

/// How long from now until a moment just after `at` (a Lease's expiry): just past it, so that
/// the Lease reads as run out by then.
pub fn until_past(at: SystemTime) -> Duration {
    at.duration_since(SystemTime::now()).unwrap_or_default() + Duration::from_millis(20)
}

/// The members now: the held, fresh shard Leases of the namespace.
pub async fn members(api: &Api<Lease>) -> Result<Vec<String>, kube::Error> {
    Ok(members_until(api).await?.0)
}

/// [`members`] (sorted; each once, as a member is named by its Lease's name), and when the
/// first of their Leases runs out unless renewed.
pub async fn members_until(
    api: &Api<Lease>,
) -> Result<(Vec<String>, Option<SystemTime>), kube::Error> {
    let leases = api.list(&ListParams::default()).await?;
    let now = SystemTime::now();
    let mut members: Vec<String> = leases.iter().filter_map(|l| member_of(l, now)).collect();
    members.sort();
    Ok((members, first_expiry(&leases.items, now)))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use serde_json::json;

    use super::*;

    fn lease(name: &str, holder: Option<&str>, renewed_secs_ago: u64) -> Lease {
        let renewed = SystemTime::now() - Duration::from_secs(renewed_secs_ago);
        let mut lease: Lease = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        if let Some(spec) = lease.spec.as_mut() {
            let renewed = renewed.try_into().unwrap_or_else(|e| panic!("{e}"));
            spec.renew_time = Some(MicroTime(renewed));
        }
        lease
    }

    #[test]
    fn a_held_fresh_shard_lease_is_a_member_and_nothing_else_is() {
        let now = SystemTime::now();
        assert_eq!(
            member_of(&lease("weir-shard-a", Some("a"), 3), now).as_deref(),
            Some("a")
        );
        assert_eq!(
            member_of(&lease("weir-shard-a", Some("a"), 20), now),
            None,
            "expired"
        );
        assert_eq!(
            member_of(&lease("weir-shard-a", None, 1), now),
            None,
            "released"
        );
        assert_eq!(
            member_of(&lease("weir-shard-a", Some("b"), 1), now),
            None,
            "someone else's"
        );
        assert_eq!(
            member_of(&lease("weir-leader", Some("a"), 1), now),
            None,
            "not a shard lease"
        );
    }

    #[test]
    fn the_first_expiry_is_the_soonest_fresh_members() {
        let now = SystemTime::now();
        let leases = [
            lease("weir-shard-a", Some("a"), 3),
            lease("weir-shard-b", Some("b"), 10),
            lease("weir-shard-c", Some("c"), 20),
            lease("weir-shard-d", None, 14),
        ];
        let first = first_expiry(&leases, now).unwrap_or(now);
        let in_secs = first.duration_since(now).unwrap_or_default().as_secs_f64();
        assert!((4.5..5.5).contains(&in_secs), "b's, in 5 s: {in_secs}");
        assert_eq!(first_expiry(&leases[2..], now), None, "run out, released");
    }

    #[test]
    fn the_shard_lease_is_held_like_the_leader_lease_under_its_own_name() {
        let config = ShardConfig::new("weir-7c9f-x2", "weir-system");
        let lease = lease_config(&config);
        assert_eq!(lease.lease, "weir-shard-weir-7c9f-x2");
        assert_eq!(lease.identity, "weir-7c9f-x2");
        assert_eq!(lease.namespace, "weir-system");
    }
}
