//! What a source of member kubeconfigs found, read as changes: which clusters to engage, relabel or release.
//!
//! A source (the `--clusters` directory, [`super::dir`]; the `--cluster-secrets` Secrets,
//! [`super::secrets`]) lists what it holds now, each cluster by name with its kubeconfig's
//! text and its labels. [`Seen`] compares that with the last listing: a new or changed
//! kubeconfig is handed over again (the source rotates the cluster's credentials, or engages
//! it anew at another server); changed labels alone relabel the engaged cluster; a cluster
//! no longer listed is released. A kubeconfig that is refused
//! ([`super::kubeconfig::parse_checked`]) is reported once, naming where it came from, and
//! changes nothing else: a new cluster is not engaged, an engaged one whose kubeconfig turns
//! bad keeps its last good configuration (and is released when it goes).

use std::collections::BTreeMap;

use kube::config::Kubeconfig;
use sha2::{Digest, Sha256};

use super::kubeconfig::{KubeconfigError, Origin, parse_checked};

/// A cluster's labels (a Secret's; a file has none), which the policy may grant clusters by.
pub type Labels = BTreeMap<String, String>;

/// A cluster to engage, or whose kubeconfig changed.
#[derive(Debug)]
pub struct Found {
    /// The cluster's name.
    pub name: String,
    /// Where its kubeconfig came from.
    pub origin: Origin,
    /// The kubeconfig, checked.
    pub kubeconfig: Kubeconfig,
    /// Its labels.
    pub labels: Labels,
}

/// What one listing asks for.
#[derive(Debug, Default)]
pub struct Changes {
    /// Clusters to engage (new ones, and engaged ones whose kubeconfig changed).
    pub engage: Vec<Found>,
    /// Engaged clusters whose labels alone changed, with their labels now.
    pub relabel: Vec<(String, Labels)>,
    /// Clusters no longer listed.
    pub release: Vec<String>,
    /// Kubeconfigs refused in this listing (each said once until its content changes again).
    pub refused: Vec<KubeconfigError>,
}

/// One cluster as a source lists it now.
pub struct Listed {
    /// The cluster's name.
    pub name: String,
    /// Where its kubeconfig comes from.
    pub origin: Origin,
    /// The kubeconfig's text, or why there is none.
    pub text: Result<String, KubeconfigError>,
    /// Its labels.
    pub labels: Labels,
}

/// What the last listing held: each cluster's kubeconfig digest, labels, and whether it is
/// engaged.
#[derive(Debug, Default)]
pub struct Seen {
    clusters: BTreeMap<String, Last>,
}

#[derive(Debug)]
struct Last {
    digest: [u8; 32],
    labels: Labels,
    engaged: bool,
}

impl Seen {
    /// Compares `listed` (every cluster the source holds now) with the last listing.
    pub fn diff(&mut self, listed: Vec<Listed>) -> Changes {
        let mut changes = Changes::default();
        let gone: Vec<String> = (self.clusters.keys())
            .filter(|name| !listed.iter().any(|l| &l.name == *name))
            .cloned()
            .collect();
        for name in gone {
            if self.clusters.remove(&name).is_some_and(|last| last.engaged) {
                changes.release.push(name);
            }
        }
        for Listed {
            name,
            origin,
            text,
            labels,
        } in listed
        {
            let said = match &text {
                Ok(text) => text.clone(),
                Err(e) => e.to_string(),
            };
            let digest: [u8; 32] = Sha256::digest(said.as_bytes()).into();
            let engaged = match self.clusters.get_mut(&name) {
                Some(last) if last.digest == digest => {
                    if last.labels != labels {
                        last.labels = labels.clone();
                        if last.engaged {
                            changes.relabel.push((name, labels));
                        }
                    }
                    continue;
                }
                Some(last) => last.engaged,
                None => false,
            };
            let last = |engaged| Last {
                digest,
                labels: labels.clone(),
                engaged,
            };
            match text.and_then(|text| parse_checked(&origin, &text)) {
                Ok(kubeconfig) => {
                    self.clusters.insert(name.clone(), last(true));
                    changes.engage.push(Found {
                        name,
                        origin,
                        kubeconfig,
                        labels,
                    });
                }
                Err(e) => {
                    // An engaged cluster keeps its last good configuration.
                    self.clusters.insert(name, last(engaged));
                    changes.refused.push(e);
                }
            }
        }
        changes
    }

    /// A cluster's engagement failed after its kubeconfig was accepted (no client could be
    /// built): it is not engaged, and its kubeconfig is read again only once it changes.
    pub fn not_engaged(&mut self, name: &str) {
        if let Some(last) = self.clusters.get_mut(name) {
            last.engaged = false;
        }
    }
}
