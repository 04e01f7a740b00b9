//! Whether a live object already holds a desired manifest: then writing it would change nothing.

use kube::api::DynamicObject;
use serde_json::Value;

/// Whether `live` already holds every field of `desired`: then applying it would change nothing.
/// Objects compare key by key (extra live keys, e.g. defaults, are fine); lists element by element.
pub fn holds(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d.iter().all(|(k, dv)| match l.get(k) {
            Some(lv) => holds(lv, dv),
            None => dv.is_null(),
        }),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| holds(lv, dv))
        }
        (Value::Number(l), Value::Number(d)) => l.as_f64() == d.as_f64(),
        (l, d) => l == d,
    }
}

/// [`holds`] for a cached child: compares everything but `apiVersion`/`kind`, which list
/// responses may omit. Runs for every child on every reconcile, so it reads the body in place
/// and serialises only the (small) metadata, not a deep copy of the whole live object.
pub fn live_holds(live: &DynamicObject, desired: &Value) -> bool {
    let Some(d) = desired.as_object() else {
        return false;
    };
    // A body-less object (`data: null`) serialises to its metadata alone.
    let body = live.data.as_object();
    d.iter()
        .filter(|(k, _)| *k != "apiVersion" && *k != "kind")
        .all(|(k, dv)| {
            if k == "metadata" {
                return serde_json::to_value(&live.metadata).is_ok_and(|lv| holds(&lv, dv));
            }
            match body.and_then(|b| b.get(k)) {
                Some(lv) => holds(lv, dv),
                None => dv.is_null(),
            }
        })
}
