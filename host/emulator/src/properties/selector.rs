//! Label selectors: the parser and matcher against a model evaluator; malformed text is an error.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::config;
use crate::wire::selector::LabelSelector;

/// One requirement, as the Kubernetes selector grammar has them.
#[derive(Clone, Debug)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    /// What the requirement means, read straight from the Kubernetes documentation.
    fn holds(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }

    /// The requirement as text, in one of the spellings the grammar allows (`spaced`).
    fn render(&self, spaced: bool) -> String {
        let s = if spaced { " " } else { "" };
        match self {
            Requirement::Equals(k, v) if spaced => format!("{k} == {v}"),
            Requirement::Equals(k, v) => format!("{k}={v}"),
            Requirement::NotEquals(k, v) => format!("{k}{s}!={s}{v}"),
            Requirement::In(k, vs) => format!("{k} in ({s}{}{s})", vs.join(&format!(",{s}"))),
            Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
            Requirement::Exists(k) => format!("{s}{k}"),
            Requirement::DoesNotExist(k) => format!("!{s}{k}"),
        }
    }
}

fn label_key() -> impl Strategy<Value = String> {
    prop::sample::select(&["app", "tier", "x-1", "a.b_c", "example.com/team"][..])
        .prop_map(String::from)
}

fn label_value() -> impl Strategy<Value = String> {
    prop::sample::select(&["web", "api", "v1.2", "a_b", "Z"][..]).prop_map(String::from)
}

fn requirement() -> impl Strategy<Value = Requirement> {
    let values = || prop::collection::vec(label_value(), 1..3);
    prop_oneof![
        (label_key(), prop_oneof![label_value(), Just(String::new())])
            .prop_map(|(k, v)| Requirement::Equals(k, v)),
        (label_key(), label_value()).prop_map(|(k, v)| Requirement::NotEquals(k, v)),
        (label_key(), values()).prop_map(|(k, vs)| Requirement::In(k, vs)),
        (label_key(), values()).prop_map(|(k, vs)| Requirement::NotIn(k, vs)),
        label_key().prop_map(Requirement::Exists),
        label_key().prop_map(Requirement::DoesNotExist),
    ]
}

fn label_set() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(label_key(), label_value(), 0..4)
}

fn labelled(labels: &BTreeMap<String, String>) -> Value {
    json!({"metadata": {"name": "x", "labels": labels}})
}

/// Text the Kubernetes selector grammar rejects, each kind of mistake once.
fn malformed() -> impl Strategy<Value = String> {
    (label_key(), label_value(), 0..9usize).prop_map(|(k, v, mistake)| match mistake {
        0 => format!("{k} in {v}"),
        1 => format!("{k} in ({v}"),
        2 => format!("{k} {v}"),
        3 => format!("={v}"),
        4 => format!("{k}={v}={v}"),
        5 => format!("{k} in ({v} {v})"),
        6 => format!("{k}!"),
        7 => format!("{k}=({v})"),
        _ => format!("{k} notin ({v}))"),
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_selector_matches_exactly_the_labels_its_requirements_hold_for(
        requirements in prop::collection::vec((requirement(), any::<bool>()), 0..4),
        labels in label_set(),
    ) {
        let text = requirements
            .iter()
            .map(|(r, spaced)| r.render(*spaced))
            .collect::<Vec<_>>()
            .join(",");
        let selector = LabelSelector::parse(&text);
        prop_assert!(selector.is_ok(), "{text:?}: {selector:?}");
        let expected = requirements.iter().all(|(r, _)| r.holds(&labels));
        let matched = selector.is_ok_and(|s| s.matches(&labelled(&labels)));
        prop_assert_eq!(matched, expected, "{} on {:?}", text, labels);
    }

    #[test]
    fn any_text_parses_or_fails_without_a_panic(
        text in prop_oneof![any::<String>(), "[a-c =!(),in]{0,16}"],
        labels in label_set(),
    ) {
        if let Ok(selector) = LabelSelector::parse(&text) {
            selector.matches(&labelled(&labels));
        }
    }

    #[test]
    fn malformed_requirements_are_errors_even_among_valid_ones(
        bad in malformed(),
        good in requirement(),
    ) {
        for text in [bad.clone(), format!("{},{bad}", good.render(false))] {
            let parsed = LabelSelector::parse(&text);
            prop_assert!(parsed.is_err(), "{text:?} parsed as {parsed:?}");
        }
    }
}
