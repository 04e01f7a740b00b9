//! A fleet: several emulated clusters in one process, each its own [`Emulator`] on its own port.
//!
//! Members share nothing but the async runtime: each has its own store, resourceVersion
//! counter, discovery, CRDs, RBAC (when secure), request log, fault rules and kubeconfig, so a
//! client of one never sees another's objects. A fleet is what the multi-cluster tests and
//! `weir dev --clusters N` run a hub and its member clusters on.

use std::path::{Path, PathBuf};

use crate::emulator::{Emulator, Error};
use crate::state::config::EmulatorConfig;

/// Several named emulators, started together and stopped together.
pub struct Fleet {
    members: Vec<(String, Emulator)>,
}

impl Fleet {
    /// Starts one emulator per name, each with a copy of `config` on a port of its own. What
    /// two members cannot share is not copied: each gets port 0, no state file and fault rules
    /// of its own (empty; set them through [`Emulator::faults`]). On an error the members
    /// started so far are stopped.
    pub async fn start(names: &[&str], config: &EmulatorConfig) -> Result<Fleet, Error> {
        let mut members = Vec::with_capacity(names.len());
        for name in names {
            let own = EmulatorConfig {
                port: 0,
                state_file: None,
                faults: crate::state::faults::Faults::default(),
                ..config.clone()
            };
            match Emulator::start(own).await {
                Ok(emulator) => members.push(((*name).to_owned(), emulator)),
                Err(e) => {
                    Fleet { members }.shutdown().await;
                    return Err(e);
                }
            }
        }
        Ok(Fleet { members })
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Emulator> {
        self.members.iter().find(|(n, _)| n == name).map(|(_, e)| e)
    }

    /// Every member with its name, in the order they were started.
    pub fn members(&self) -> impl Iterator<Item = (&str, &Emulator)> {
        self.members.iter().map(|(n, e)| (n.as_str(), e))
    }

    /// The members' names, in the order they were started.
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The path [`Fleet::write_kubeconfigs`] writes `name`'s kubeconfig to in `dir`:
    /// `DIR/NAME.yaml`, so a reader that names a cluster by its file's stem names it `NAME`.
    pub fn kubeconfig_path(dir: &Path, name: &str) -> PathBuf {
        dir.join(format!("{name}.yaml"))
    }

    /// Writes one kubeconfig per member into `dir` (which must exist), as
    /// [`Fleet::kubeconfig_path`] names them; returns the paths in member order.
    pub fn write_kubeconfigs(&self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
        let mut paths = Vec::with_capacity(self.members.len());
        for (name, emulator) in &self.members {
            let path = Self::kubeconfig_path(dir, name);
            emulator.write_kubeconfig(&path)?;
            paths.push(path);
        }
        Ok(paths)
    }

    /// Stops every member ([`Emulator::shutdown`]).
    pub async fn shutdown(self) {
        for (_, emulator) in self.members {
            emulator.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};

    use super::*;

    #[tokio::test]
    async fn each_member_of_a_fleet_keeps_its_own_objects_and_kubeconfig() -> anyhow::Result<()> {
        let fleet = Fleet::start(&["hub", "member-a"], &EmulatorConfig::default()).await?;
        let (Some(hub), Some(member)) = (fleet.member("hub"), fleet.member("member-a")) else {
            anyhow::bail!("the fleet lacks a member it was asked to start");
        };
        assert_ne!(hub.url(), member.url(), "each member has a port of its own");
        let page: ConfigMap =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "page"}}))?;
        Api::<ConfigMap>::namespaced(hub.client(), "default")
            .create(&PostParams::default(), &page)
            .await?;
        let in_member = Api::<ConfigMap>::namespaced(member.client(), "default")
            .get_opt("page")
            .await?;
        assert!(
            in_member.is_none(),
            "a member does not see the hub's objects"
        );

        let dir = tempfile::tempdir()?;
        let paths = fleet.write_kubeconfigs(dir.path())?;
        assert_eq!(
            paths,
            [
                dir.path().join("hub.yaml"),
                dir.path().join("member-a.yaml")
            ]
        );
        let written = kube::config::Kubeconfig::read_from(&paths[1])?;
        let server = written.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.clone());
        assert_eq!(
            server,
            Some(member.url()),
            "each kubeconfig names its member"
        );
        fleet.shutdown().await;
        Ok(())
    }
}
