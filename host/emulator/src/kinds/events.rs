//! One Event store behind two APIs: `events.k8s.io/v1` Events are stored as core/v1 Events.
//!
//! kube-apiserver keeps both APIs on one storage (`/registry/events`) and converts between them
//! (`pkg/apis/events/v1/conversion.go`): an Event written through either API is read through
//! both, so `kubectl get events` (core/v1) shows what a controller recorded with events.k8s.io.

use serde_json::{Map, Value};

/// `(events.k8s.io/v1 field, core/v1 field)`; the other fields have the same name in both.
const RENAMES: &[(&str, &str)] = &[
    ("note", "message"),
    ("regarding", "involvedObject"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &mut Value, to_core: bool) {
    let Some(m) = obj.as_object_mut() else { return };
    let mut moved = Map::new();
    for &(events, core) in RENAMES {
        let (src, dst) = if to_core {
            (events, core)
        } else {
            (core, events)
        };
        if let Some(v) = m.remove(src) {
            moved.insert(dst.to_string(), v);
        }
    }
    m.extend(moved);
    // Both types hold the object reference by value: Go writes `{}` when it is empty.
    let reference = if to_core {
        "involvedObject"
    } else {
        "regarding"
    };
    m.entry(reference)
        .or_insert_with(|| Value::Object(Map::new()));
}

/// A stored (core/v1) Event as events.k8s.io/v1 serves it.
pub fn to_events_v1(obj: &mut Value) {
    rename(obj, false);
}

/// An events.k8s.io/v1 Event in the stored (core/v1) form.
pub fn to_core_v1(obj: &mut Value) {
    rename(obj, true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_events_v1_event_round_trips_through_the_core_form() {
        let v1 = json!({"note": "pulled", "regarding": {"kind": "Pod", "name": "p"}, "reason": "Pulled",
                        "reportingController": "kubelet", "deprecatedCount": 2, "type": "Normal"});
        let mut core = v1.clone();
        to_core_v1(&mut core);
        assert_eq!(
            core,
            json!({"message": "pulled", "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Pulled",
                   "reportingComponent": "kubelet", "count": 2, "type": "Normal"})
        );
        to_events_v1(&mut core);
        assert_eq!(core, v1);
        let mut bare = json!({"note": "x"});
        to_core_v1(&mut bare);
        assert_eq!(bare, json!({"message": "x", "involvedObject": {}}));
    }
}
