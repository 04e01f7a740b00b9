//! One fault rule of each kind the emulator injects, as the fault scenario and the soak use them.
//!
//! Every rule fires on every matching request; callers lower its probability and scope it to the
//! host's requests ([`Rule::probability`], [`Rule::client`]).

use weir_emulator::{Fault, Rule, Verb};

/// Each kind of API fault, named: 500, 503, 429 with `Retry-After` (writes), 409 (updates and
/// patches), latency, connection resets, watches cut mid-stream (at 50%: a watch meets it once
/// per re-watch) and `410 Expired` on watches and lists (at 50%).
pub fn every_kind() -> Vec<(&'static str, Rule)> {
    use Verb::{Create, Delete, List, Patch, Update, Watch};
    let writes = [Create, Update, Patch, Delete];
    vec![
        ("500", Rule::new(&[], None, Fault::Status { code: 500 })),
        ("503", Rule::new(&[], None, Fault::Status { code: 503 })),
        (
            "429",
            Rule::new(
                &writes,
                None,
                Fault::TooManyRequests {
                    retry_after_secs: 1,
                },
            ),
        ),
        (
            "409",
            Rule::new(&[Update, Patch], None, Fault::Status { code: 409 }),
        ),
        (
            "latency",
            Rule::new(&[], None, Fault::Latency { millis: 150 }),
        ),
        ("reset", Rule::new(&[], None, Fault::Reset)),
        (
            "cut watch",
            Rule::new(&[Watch], None, Fault::CloseWatch { after_millis: 200 }).probability(0.5),
        ),
        (
            "410",
            Rule::new(&[Watch, List], None, Fault::Expired).probability(0.5),
        ),
    ]
}
