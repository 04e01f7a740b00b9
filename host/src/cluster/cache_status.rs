//! What a `TenantPlugin`'s status says of its tenant's cache cap (`CacheLimited`):
//! [`super::status::desired`] adds the condition to every TenantPlugin of a tenant whose entry
//! sets `maxCachedObjects` (a Plugin, or a tenant with no cap, has none: the question does not
//! arise, as `Verified` without a verification policy).
//!
//! - `True`, reason `AtCap`, while the cap leaves objects of some kind out: the message names
//!   the cap, the objects held and the kinds left out, whose reconciles are held back;
//! - `False`, reason `WithinCap`, while every store of the tenant holds its whole kind (kept,
//!   rather than removed, as a Node keeps `MemoryPressure=False`: its `lastTransitionTime` says
//!   since when the tenant is whole again, and a reader tells "not capped" from "not reported");
//! - until the tenant's stores have listed their kinds (after a start, a new plugin, a swap),
//!   what the status said before stands (`Unknown`, reason `Listing`, if it said nothing): a
//!   restart recomputes the condition without flipping it on the way.
//!
//! The condition is computed from the cap's present state ([`Fill`]) and, like every condition,
//! written only when it changed: the message carries the count only while the cap is reached.

use crate::runtime::Fill;

/// The condition's type.
pub const CACHE_LIMITED: &str = "CacheLimited";

/// `(status, reason, message)` of a condition.
pub(super) type Said = (&'static str, &'static str, String);

/// What the condition says while the tenant's stores have not listed, if it said nothing before.
pub(super) fn listing(fill: &Fill) -> Said {
    (
        "Unknown",
        "Listing",
        format!(
            "{} has not listed every kind its plugins read yet (their watches are starting, or \
             none of its plugins serves): whether it is at its cap of {} objects \
             (maxCachedObjects) is not known",
            fill.owner, fill.limit
        ),
    )
}

/// What the condition says of `fill`; `None` while the stores have not listed (keep what was
/// said).
pub(super) fn cache_condition(fill: &Fill) -> Option<Said> {
    if !fill.left_out.is_empty() {
        let kinds = fill.left_out.join(", ");
        return Some((
            "True",
            "AtCap",
            format!(
                "{} caches at most {} objects (maxCachedObjects) and holds {}: objects of {kinds} \
                 are left out, so a reconcile that reads {kinds} is held back (its parent says \
                 Reconciled=False, CacheLimited) until objects are deleted",
                fill.owner, fill.limit, fill.held
            ),
        ));
    }
    fill.listed.then(|| {
        (
            "False",
            "WithinCap",
            format!(
                "{} caches every object of its plugins' kinds, within its cap of {} objects \
                 (maxCachedObjects)",
                fill.owner, fill.limit
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::cluster::PluginStatus;
    use crate::cluster::fetch::TagCheck;
    use crate::cluster::resource::Condition;
    use crate::cluster::status::tests::serving;
    use crate::cluster::status::{Attempt, Checks, desired};

    use super::*;

    /// Team B's cache: a cap of 14, `held` objects, `left_out` kinds, listed or not.
    fn fill(left_out: &[&str], held: usize, listed: bool) -> Fill {
        Fill {
            owner: "tenant team-b".into(),
            limit: 14,
            held,
            left_out: left_out.iter().map(|k| (*k).to_owned()).collect(),
            listed,
        }
    }

    fn with(cache: Option<&Fill>, previous: Option<&PluginStatus>) -> PluginStatus {
        let checks = Checks {
            tag: &TagCheck::NotAsked,
            signature: None,
            candidate: None,
            cache,
        };
        desired(
            Some(1),
            Some(&serving()),
            &Attempt::Loaded,
            checks,
            previous,
        )
    }

    fn said(status: &PluginStatus) -> Option<&Condition> {
        status.conditions.iter().find(|c| c.type_ == CACHE_LIMITED)
    }

    fn is(status: &PluginStatus) -> (&str, &str) {
        said(status).map_or(("", ""), |c| (c.status.as_str(), c.reason.as_str()))
    }

    fn condition_types(status: &PluginStatus) -> Vec<&str> {
        status.conditions.iter().map(|c| c.type_.as_str()).collect()
    }

    #[test]
    fn a_tenant_at_its_cap_says_so_naming_the_cap_the_count_and_the_kinds_left_out() {
        let status = with(Some(&fill(&["ConfigMap", "Secret"], 14, true)), None);
        assert_eq!(is(&status), ("True", "AtCap"));
        let message = said(&status)
            .map(|c| c.message.as_str())
            .unwrap_or_default();
        for needle in [
            "tenant team-b",
            "at most 14 objects (maxCachedObjects)",
            "holds 14",
            "ConfigMap, Secret",
            "CacheLimited",
        ] {
            assert!(message.contains(needle), "{needle:?} is not in {message:?}");
        }
        assert_eq!(condition_types(&status), ["Loaded", "Ready", CACHE_LIMITED]);
    }

    #[test]
    fn a_tenant_whole_again_says_false_from_then_on_and_a_resync_writes_nothing() {
        let capped = with(Some(&fill(&["ConfigMap"], 14, true)), None);
        let mut whole = with(Some(&fill(&[], 9, true)), Some(&capped));
        assert_eq!(is(&whole), ("False", "WithinCap"));
        let message = said(&whole).map(|c| c.message.clone()).unwrap_or_default();
        assert!(message.contains("cap of 14 objects"), "{message}");
        let since = Some("2026-01-01T00:00:00Z".to_owned());
        for c in &mut whole.conditions {
            c.last_transition_time.clone_from(&since);
        }
        // A resync with other counts says the same: nothing to write.
        let again = with(Some(&fill(&[], 3, true)), Some(&whole));
        assert_eq!(again, whole);
        // At the cap again: the condition turns, with a new transition time.
        let capped = with(Some(&fill(&["ConfigMap"], 14, true)), Some(&whole));
        assert_eq!(is(&capped), ("True", "AtCap"));
        assert_ne!(
            said(&capped).and_then(|c| c.last_transition_time.clone()),
            since
        );
    }

    #[test]
    fn until_the_stores_have_listed_what_the_status_said_stands() {
        let mut capped = with(Some(&fill(&["ConfigMap"], 14, true)), None);
        for c in &mut capped.conditions {
            c.last_transition_time = Some("2026-01-01T00:00:00Z".to_owned());
        }
        // A restart: nothing listed yet, nothing known short; the status is kept as it was.
        let restarted = with(Some(&fill(&[], 0, false)), Some(&capped));
        assert_eq!(restarted, capped);
        // Never said anything: Unknown until the stores have listed.
        let fresh = with(Some(&fill(&[], 0, false)), None);
        assert_eq!(is(&fresh), ("Unknown", "Listing"));
        // What is known short is said at once, listed or not.
        let short = with(Some(&fill(&["Secret"], 14, false)), None);
        assert_eq!(is(&short), ("True", "AtCap"));
    }

    #[test]
    fn a_plugin_or_a_tenant_with_no_cap_has_no_such_condition() {
        let status = with(None, None);
        assert!(said(&status).is_none(), "{status:?}");
        // Nor does one that had a cap keep it: the condition is not carried over.
        let capped = with(Some(&fill(&["ConfigMap"], 14, true)), None);
        assert!(said(&with(None, Some(&capped))).is_none());
    }
}
