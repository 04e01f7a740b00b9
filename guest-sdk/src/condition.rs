//! A status condition a plugin can set, shaped like `metav1.Condition` minus the clock.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One entry of `status.conditions`.
///
/// A plugin has no clock, so it leaves `lastTransitionTime` unset and the host
/// fills it in when the condition's status changes. Put this type in a
/// status struct so the CRD schema keeps the fields the host adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "One condition of the object's state; the host sets lastTransitionTime.")]
pub struct Condition {
    /// The condition's name, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase word saying why, for machines.
    #[serde(default)]
    pub reason: String,
    /// A sentence saying why, for people.
    #[serde(default)]
    pub message: String,
    /// When `status` last changed; set by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// The parent generation the condition was computed from; set by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// A condition of type `type_` that is `True` when `holds`, else `False`.
    pub fn new(type_: &str, holds: bool, reason: &str, message: impl Into<String>) -> Self {
        Condition {
            type_: type_.to_owned(),
            status: if holds { "True" } else { "False" }.to_owned(),
            reason: reason.to_owned(),
            message: message.into(),
            last_transition_time: None,
            observed_generation: None,
        }
    }
}
