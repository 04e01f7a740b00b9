//! The one child a Spread places in each cluster: a Deployment running its image.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::ResourceExt;

use crate::Spread;

/// The Deployment every named cluster gets: named after the Spread, `spec.replicas` pods of
/// `spec.image` in a container called `app`.
pub fn deployment(spread: &Spread) -> Deployment {
    let name = spread.name_any();
    let selector: BTreeMap<String, String> = [
        ("app.kubernetes.io/name".to_owned(), "spread".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), name.clone()),
    ]
    .into();
    let mut labels = selector.clone();
    labels.insert("app.kubernetes.io/managed-by".into(), "weir".into());
    Deployment {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(spread.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(selector),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some(spread.spec.image.clone()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}
