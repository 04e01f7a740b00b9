//! What a plugin selects to read beyond its children (the `select-related` export, contract 0.2.0), and label matching.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Objects a plugin wants to read for one parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    /// `apiVersion` of a declared related kind.
    pub api_version: String,
    /// Kind of a declared related kind.
    pub kind: String,
    /// Absent, or the parent's namespace (anything else is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The cluster to read in (contract 0.4.0); absent: the parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// One object by name, or a set by labels.
    pub selector: Selector,
}

/// Which objects of a kind a selection reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Selector {
    /// The object with this name, whether or not it exists yet.
    Name(String),
    /// Every object whose labels match.
    Labels(LabelSelector),
}

/// A Kubernetes label selector: every `match_labels` pair and every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must be set to exactly these values.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements.
    #[serde(default)]
    pub match_expressions: Vec<LabelRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LabelRequirement {
    /// The label key.
    pub key: String,
    /// How the label's value is compared.
    pub operator: SelectorOperator,
    /// The values for `In` and `NotIn`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// The operators of a label requirement, as Kubernetes spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SelectorOperator {
    /// The label is set to one of the values.
    In,
    /// The label is unset or set to none of the values.
    NotIn,
    /// The label is set.
    Exists,
    /// The label is unset.
    DoesNotExist,
}

impl LabelSelector {
    /// Whether an object with `labels` is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// Whether an object whose label `k` has the value `label(k)` is selected.
    pub fn matches_with<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| label(k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| {
                let value = label(&r.key);
                let listed = |v: &str| r.values.iter().any(|x| x == v);
                match r.operator {
                    SelectorOperator::In => value.is_some_and(listed),
                    SelectorOperator::NotIn => value.is_none_or(|v| !listed(v)),
                    SelectorOperator::Exists => value.is_some(),
                    SelectorOperator::DoesNotExist => value.is_none(),
                }
            })
    }

    /// What is wrong with the selector as Kubernetes would judge it, if anything: `In`/`NotIn`
    /// need values, `Exists`/`DoesNotExist` take none, keys are not empty.
    pub fn problem(&self) -> Option<String> {
        if self.match_labels.keys().any(String::is_empty) {
            return Some("a matchLabels key is empty".into());
        }
        self.match_expressions.iter().find_map(|r| {
            let wants_values = matches!(r.operator, SelectorOperator::In | SelectorOperator::NotIn);
            if r.key.is_empty() {
                Some("a matchExpressions key is empty".into())
            } else if wants_values == r.values.is_empty() {
                Some(format!(
                    "requirement on {:?}: {:?} {} values",
                    r.key,
                    r.operator,
                    if wants_values { "needs" } else { "takes no" }
                ))
            } else {
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn requirement(key: &str, operator: SelectorOperator, values: &[&str]) -> LabelRequirement {
        LabelRequirement {
            key: key.into(),
            operator,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    #[test]
    fn match_labels_and_every_operator_behave_as_in_kubernetes() {
        let selector = LabelSelector {
            match_labels: labels(&[("app", "blog")]),
            match_expressions: vec![
                requirement("tier", SelectorOperator::In, &["web", "api"]),
                requirement("env", SelectorOperator::NotIn, &["prod"]),
                requirement("team", SelectorOperator::Exists, &[]),
                requirement("legacy", SelectorOperator::DoesNotExist, &[]),
            ],
        };
        let ok = labels(&[("app", "blog"), ("tier", "web"), ("team", "a")]);
        assert!(selector.matches(&ok));
        for (key, value) in [
            ("app", "other"),
            ("tier", "db"),
            ("env", "prod"),
            ("legacy", "yes"),
        ] {
            let mut changed = ok.clone();
            changed.insert(key.into(), value.into());
            assert!(!selector.matches(&changed), "{key}={value} must not match");
        }
        let mut no_team = ok.clone();
        no_team.remove("team");
        assert!(!selector.matches(&no_team));
        assert!(
            LabelSelector::default().matches(&BTreeMap::new()),
            "empty selects all"
        );
    }

    #[test]
    fn a_selector_kubernetes_would_reject_is_reported() {
        let bad = LabelSelector {
            match_expressions: vec![requirement("k", SelectorOperator::In, &[])],
            ..LabelSelector::default()
        };
        assert!(bad.problem().is_some_and(|p| p.contains("needs")));
        let bad = LabelSelector {
            match_expressions: vec![requirement("k", SelectorOperator::Exists, &["x"])],
            ..LabelSelector::default()
        };
        assert!(bad.problem().is_some_and(|p| p.contains("takes no")));
        assert!(LabelSelector::default().problem().is_none());
    }
}
