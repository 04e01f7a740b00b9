//! The fixture parser: any text is a fixture or a typed error, and a written fixture reads back as written.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{config, json_with, one_of, scalar};
use crate::offline::{Call, ExpectFinalize, ExpectRequeue, FormatError, parse};
use crate::plugin::{ErrorKind, Selection, Selector};

/// What a generated `expect.error` says.
#[derive(Clone, Debug)]
struct ExpectedError {
    kind: Option<ErrorKind>,
    refused: bool,
    message_contains: Option<String>,
}

/// A fixture as its author means it, before it is written out.
#[derive(Clone, Debug)]
struct Case {
    call: Option<Call>,
    parent: Value,
    observed: Option<Vec<Value>>,
    finalizer: Option<String>,
    children: Option<Vec<Value>>,
    status: Option<Option<Value>>,
    requeue: Option<ExpectRequeue>,
    error: Option<ExpectedError>,
    finalize: Option<ExpectFinalize>,
    selections: Option<Vec<Selection>>,
}

impl Case {
    /// The fixture file's text.
    fn yaml(&self) -> String {
        let mut expect = json!({});
        if let Some(c) = &self.children {
            expect["children"] = json!(c);
        }
        if let Some(s) = &self.status {
            expect["status"] = s.clone().unwrap_or(Value::Null);
        }
        if let Some(r) = self.requeue {
            expect["requeue"] = match r {
                ExpectRequeue::Done => json!("done"),
                ExpectRequeue::Now => json!("now"),
                ExpectRequeue::After(ms) => json!({ "after": ms }),
            };
        }
        if let Some(e) = &self.error {
            let mut error = json!({ "refused": e.refused });
            if let Some(kind) = e.kind {
                error["kind"] = json!(kind);
            }
            if let Some(m) = &e.message_contains {
                error["message_contains"] = json!(m);
            }
            expect["error"] = error;
        }
        if let Some(f) = self.finalize {
            expect["finalize"] = match f {
                ExpectFinalize::Complete => json!("complete"),
                ExpectFinalize::Pending => json!("pending"),
                ExpectFinalize::AgainAfter(ms) => json!({ "againAfter": ms }),
            };
        }
        if let Some(s) = &self.selections {
            expect["selections"] = json!(s);
        }
        let mut doc = json!({"description": "a case", "parent": self.parent, "expect": expect});
        if let Some(call) = self.call {
            doc["call"] = json!(if call == Call::Finalize {
                "finalize"
            } else {
                "reconcile"
            });
        }
        if let Some(o) = &self.observed {
            doc["observed"] = json!(o);
        }
        if let Some(f) = &self.finalizer {
            doc["finalizer"] = json!(f);
        }
        crate::yaml::to_string(&doc).unwrap_or_default()
    }

    /// Whether the format's documentation (`fixtures/mod.rs`) allows this case: `expect`
    /// holds `error` alone, or for a reconcile outputs, or for a finalize `finalize` with any
    /// outputs (a cleanup step that acts).
    fn is_valid(&self) -> bool {
        let call = self.call.unwrap_or_default();
        let outputs = self.children.is_some() || self.status.is_some() || self.requeue.is_some();
        let error_ok = self.error.as_ref().is_none_or(|e| {
            (e.refused || e.kind.is_some()) && !(e.refused && e.kind == Some(ErrorKind::Transient))
        });
        let answer = match call {
            Call::Reconcile => self.finalize.is_none() && outputs,
            Call::Finalize => self.finalize.is_some(),
        };
        let alone = match call {
            Call::Reconcile => self.finalize.is_none(),
            Call::Finalize => !outputs,
        };
        match &self.error {
            Some(_) => !outputs && self.finalize.is_none() && error_ok && alone,
            None => answer,
        }
    }
}

fn object() -> impl Strategy<Value = Value> {
    json_with(one_of(&["apiVersion", "kind", "metadata", "name"]))
}

fn case() -> impl Strategy<Value = Case> {
    let call = prop::option::of(prop_oneof![Just(Call::Reconcile), Just(Call::Finalize)]);
    let requeue = prop_oneof![
        Just(ExpectRequeue::Done),
        Just(ExpectRequeue::Now),
        (0..100_000u64).prop_map(ExpectRequeue::After),
    ];
    let finalize = prop_oneof![
        Just(ExpectFinalize::Complete),
        Just(ExpectFinalize::Pending),
        (0..100_000u64).prop_map(ExpectFinalize::AgainAfter),
    ];
    let error = (
        prop::option::of(prop_oneof![
            Just(ErrorKind::Permanent),
            Just(ErrorKind::Transient)
        ]),
        any::<bool>(),
        prop::option::of(one_of(&["twice", "", "no: colon"])),
    )
        .prop_map(|(kind, refused, message_contains)| ExpectedError {
            kind,
            refused,
            message_contains,
        });
    let selection =
        (one_of(&["ConfigMap", "Secret"]), one_of(&["t", "u"])).prop_map(|(kind, name)| {
            Selection {
                api_version: "v1".into(),
                kind,
                namespace: None,
                cluster: None,
                selector: Selector::Name(name),
            }
        });
    let objects = || prop::collection::vec(object(), 0..2);
    let status = prop::option::of(scalar().prop_filter("a status", |s| !s.is_null()));
    (
        (
            call,
            object(),
            prop::option::weighted(0.3, objects()),
            prop::option::weighted(0.2, one_of(&["x/y"])),
        ),
        (
            prop::option::weighted(0.4, objects()),
            prop::option::weighted(0.3, status),
            prop::option::weighted(0.4, requeue),
        ),
        (
            prop::option::weighted(0.3, error),
            prop::option::weighted(0.3, finalize),
            prop::option::weighted(0.2, prop::collection::vec(selection, 0..2)),
        ),
    )
        .prop_map(
            |(
                (call, parent, observed, finalizer),
                (children, status, requeue),
                (error, finalize, selections),
            )| Case {
                call,
                parent,
                observed,
                finalizer,
                children,
                status,
                requeue,
                error,
                finalize,
                selections,
            },
        )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_written_fixture_reads_back_as_written_exactly_when_the_format_allows_it(case in case()) {
        let text = case.yaml();
        let parsed = parse(&text);
        prop_assert_eq!(parsed.is_ok(), case.is_valid(), "{}\n{:?}", text, parsed.as_ref().err());
        let f = match parsed {
            Ok(f) => f,
            Err(e) => {
                prop_assert!(matches!(e, FormatError::Invalid { .. }), "{e:?}");
                return Ok(());
            }
        };
        prop_assert_eq!(f.call, case.call.unwrap_or_default());
        prop_assert_eq!(f.description, "a case");
        prop_assert_eq!(f.parent, case.parent);
        prop_assert_eq!(f.observed, case.observed.unwrap_or_default());
        prop_assert!(f.related.is_empty());
        prop_assert_eq!(f.finalizer, case.finalizer);
        prop_assert_eq!(f.expect.children, case.children);
        prop_assert_eq!(f.expect.status, case.status);
        prop_assert_eq!(f.expect.requeue, case.requeue);
        prop_assert_eq!(f.expect.finalize, case.finalize);
        prop_assert_eq!(f.expect.selections, case.selections);
        let error = f.expect.error.map(|e| (e.kind, e.refused, e.message_contains));
        let written = case.error.map(|e| (e.kind, e.refused, e.message_contains));
        prop_assert_eq!(error, written);
    }

    #[test]
    fn any_text_is_a_fixture_or_an_error_that_says_what_is_wrong(
        text in prop_oneof![
            any::<String>(),
            "[a-z:{}\\[\\], \n-]{0,40}",
            (case(), any::<prop::sample::Index>(), 0..8usize).prop_map(|(case, at, len)| {
                // A valid or invalid fixture with a few characters cut out.
                let text = case.yaml();
                let chars: Vec<char> = text.chars().collect();
                let start = at.index(chars.len().max(1));
                chars[..start.min(chars.len())]
                    .iter()
                    .chain(chars.iter().skip(start + len))
                    .collect()
            }),
        ],
    ) {
        if let Err(e) = parse(&text) {
            prop_assert!(
                matches!(
                    e,
                    FormatError::Yaml { .. } | FormatError::Shape { .. } | FormatError::Invalid { .. }
                ),
                "{e:?}"
            );
            prop_assert!(!e.to_string().is_empty());
            if let FormatError::Shape { source, .. } = &e {
                prop_assert!(!source.to_string().is_empty(), "a shape error names what is wrong");
            }
        }
    }
}
