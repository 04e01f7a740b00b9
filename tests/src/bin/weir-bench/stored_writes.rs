//! The changes the emulator stored over a run, per Blog, by resource and kind of change: whose
//! they are is read beside the controller's own write requests (the rest are the bench's creates
//! and the emulator's workload simulation).

use std::collections::BTreeMap;

use weir_emulator::{Emulator, RequestRecord, StoredWrites};

use super::request_mix;

/// The emulator's stored changes counted so far, by group, resource and kind of change.
pub(crate) struct Since(BTreeMap<(String, String, &'static str), u64>);

fn by_class(writes: Vec<StoredWrites>) -> BTreeMap<(String, String, &'static str), u64> {
    writes
        .into_iter()
        .map(|w| ((w.group, w.resource, w.change), w.count))
        .collect()
}

impl Since {
    pub(crate) fn now(emulator: &Emulator) -> Self {
        Self(by_class(emulator.stored_writes()))
    }

    /// The changes stored since [`Since::now`], most first.
    fn counts(&self, emulator: &Emulator) -> Vec<((String, String, &'static str), u64)> {
        let mut out: Vec<_> = by_class(emulator.stored_writes())
            .into_iter()
            .map(|(class, n)| {
                let before = self.0.get(&class).copied().unwrap_or(0);
                (class, n.saturating_sub(before))
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// Prints the changes stored since [`Since::now`] per Blog, by resource and kind of change,
    /// then the controller's successful write requests per Blog (`log`, without the bench's).
    pub(crate) fn print(
        &self,
        label: &str,
        emulator: &Emulator,
        blogs: usize,
        log: &[RequestRecord],
    ) {
        let per = |n: u64| n as f64 / blogs.max(1) as f64;
        let counts = self.counts(emulator);
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        println!(
            "{label}: {:.2} changes stored per Blog, by resource:",
            per(total)
        );
        for ((group, resource, change), n) in counts {
            let resource = if group.is_empty() {
                resource
            } else {
                format!("{resource}.{group}")
            };
            println!("{label}:   {:>6.2} {resource} {change}", per(n));
        }
        let writes: Vec<RequestRecord> = log
            .iter()
            .filter(|r| r.is_write() && (200..300).contains(&r.status))
            .cloned()
            .collect();
        println!(
            "{label}: of which the controller's successful write requests, {:.2} per Blog (some change nothing):",
            per(writes.len() as u64)
        );
        for ((verb, resource, _), n) in request_mix::count(&writes) {
            println!("{label}:   {:>6.2} {verb} {resource}", per(n as u64));
        }
    }
}
