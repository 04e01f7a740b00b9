//! `weir run --cluster-secrets SELECTOR`: member kubeconfigs from Secrets in the host's namespace, selected by label.
//!
//! The way operators already hand a controller a cluster (Argo CD's cluster Secrets,
//! multicluster-runtime's kubeconfig provider): a Secret in the host's namespace whose labels
//! match the selector, holding a kubeconfig under the data key `kubeconfig`. The cluster is
//! named by the Secret's name, and carries the Secret's labels, which the operator's policy
//! may grant clusters by (`clusterSelector`). The Secrets are watched through the host's own
//! client (one watch, with the selector), and each change is listed whole to
//! [`super::seen::Seen`]: a Secret created engages its cluster, one changed for the same
//! server rotates its credentials in place, one deleted (or relabelled out of the selector)
//! releases it. A Secret's kubeconfig is held to the same rule as a file's
//! ([`super::kubeconfig`]): inline credentials only, nothing run, nothing read.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::Store;

use super::kubeconfig::{KubeconfigError, Origin};
use super::seen::Listed;

/// The data key a cluster Secret holds its kubeconfig under.
pub const KUBECONFIG_KEY: &str = "kubeconfig";

/// Where the cluster Secrets are: the namespace and the label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretsConfig {
    /// The host's namespace.
    pub namespace: String,
    /// A label selector, as `kubectl get -l` takes it (`weir.dev/cluster=member`).
    pub selector: String,
}

/// Every Secret `store` holds, listed as clusters: by name, with its kubeconfig's text (or
/// why it has none) and its labels.
pub fn listed(store: &Store<Secret>) -> Vec<Listed> {
    let mut secrets: Vec<Arc<Secret>> = store.state();
    secrets.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    secrets.iter().filter_map(|s| listed_one(s)).collect()
}

/// One Secret as a cluster (`None` for one without a name, which the API never serves).
fn listed_one(secret: &Secret) -> Option<Listed> {
    let name = secret.metadata.name.clone()?;
    let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    let origin = Origin::Secret(namespace, name.clone());
    let text = match secret.data.as_ref().and_then(|d| d.get(KUBECONFIG_KEY)) {
        Some(bytes) => String::from_utf8(bytes.0.clone()).map_err(|_| KubeconfigError::Data {
            origin: origin.clone(),
            why: "is not UTF-8 text",
        }),
        None => Err(KubeconfigError::Data {
            origin: origin.clone(),
            why: "is missing",
        }),
    };
    Some(Listed {
        name,
        origin,
        text,
        labels: secret.metadata.labels.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;
    use kube::runtime::watcher;

    use super::*;
    use crate::clusters::seen::Seen;

    fn secret(name: &str, labels: &[(&str, &str)], data: Option<&str>) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("weir-system".into()),
                labels: Some(
                    (labels.iter())
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            data: data.map(|d| {
                BTreeMap::from([(KUBECONFIG_KEY.to_owned(), ByteString(d.as_bytes().to_vec()))])
            }),
            ..Secret::default()
        }
    }

    fn kubeconfig(server: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {{cluster: c, user: c}}\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\nusers:\n- name: c\n  user: {user}\n"
        )
    }

    /// A store holding exactly `secrets`, as the reflector would after a list.
    fn store(secrets: Vec<Secret>) -> Store<Secret> {
        let mut writer = kube::runtime::reflector::store::Writer::<Secret>::default();
        let reader = writer.as_reader();
        writer.apply_watcher_event(&watcher::Event::Init);
        for s in secrets {
            writer.apply_watcher_event(&watcher::Event::InitApply(s));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        reader
    }

    #[test]
    fn a_secret_engages_a_cluster_of_its_name_with_its_labels_and_a_relabel_alone_rotates_nothing()
    {
        let mut seen = Seen::default();
        let labelled = |env| {
            secret(
                "member-a",
                &[("weir.dev/cluster", "member"), ("env", env)],
                Some(&kubeconfig("https://a:6443", "{token: t}")),
            )
        };
        let changes = seen.diff(listed(&store(vec![labelled("staging")])));
        let found: Vec<_> = changes
            .engage
            .iter()
            .map(|f| (&f.name, &f.labels["env"]))
            .collect();
        assert_eq!(found, [(&"member-a".to_owned(), &"staging".to_owned())]);
        assert_eq!(
            changes.engage[0].origin.to_string(),
            "Secret weir-system/member-a"
        );

        let changes = seen.diff(listed(&store(vec![labelled("prod")])));
        assert!(
            changes.engage.is_empty(),
            "the same kubeconfig: nothing to rotate"
        );
        assert_eq!(changes.relabel.len(), 1);
        assert_eq!(changes.relabel[0].1["env"], "prod");

        let changes = seen.diff(listed(&store(vec![])));
        assert_eq!(changes.release, ["member-a"]);
    }

    #[test]
    fn a_secret_running_a_program_reading_a_file_or_holding_no_kubeconfig_is_refused_once_naming_it()
     {
        let mut seen = Seen::default();
        let secrets = vec![
            secret(
                "exec",
                &[],
                Some(&kubeconfig(
                    "https://x",
                    "{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}}",
                )),
            ),
            secret(
                "provider",
                &[],
                Some(&kubeconfig("https://x", "{auth-provider: {name: gcp}}")),
            ),
            secret(
                "file",
                &[],
                Some(&kubeconfig(
                    "https://x",
                    "{tokenFile: /var/run/secrets/token}",
                )),
            ),
            secret("empty", &[], None),
        ];
        let changes = seen.diff(listed(&store(secrets.clone())));
        assert!(changes.engage.is_empty());
        let refused: Vec<String> = changes.refused.iter().map(ToString::to_string).collect();
        for (secret, says) in [
            ("empty", "data key `kubeconfig` is missing"),
            ("exec", "uses `exec`"),
            ("file", "uses `tokenFile`"),
            ("provider", "uses `auth-provider`"),
        ] {
            assert!(
                refused.iter().any(
                    |r| r.contains(&format!("Secret weir-system/{secret}")) && r.contains(says)
                ),
                "{secret}: {refused:?}"
            );
        }
        let again = seen.diff(listed(&store(secrets)));
        assert!(
            again.refused.is_empty() && again.engage.is_empty(),
            "said once"
        );
    }
}
