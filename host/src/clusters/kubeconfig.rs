//! What a member cluster's kubeconfig may say: inline credentials only, nothing run, nothing read.
//!
//! A kubeconfig can make its reader run a program (`exec`), call an auth provider
//! (`auth-provider`: gcp, azure, oidc with a refresh) or read other local files
//! (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`). The host engages
//! a member cluster from a file it did not write, so it accepts none of these: the server, its
//! CA and the credentials must be inline (`certificate-authority-data`, `token`,
//! `client-certificate-data` with `client-key-data`, or a username and password). Every
//! cluster and user entry of the file is checked, not only the current context's.

use std::fmt;
use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// Where a member's kubeconfig came from, as errors and logs name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A file of the `--clusters` directory.
    File(PathBuf),
    /// A Secret selected by `--cluster-secrets`: its namespace and name.
    Secret(String, String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Secret(namespace, name) => write!(f, "Secret {namespace}/{name}"),
        }
    }
}

/// Why a member cluster's kubeconfig file was refused.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The file could not be read.
    #[error("cannot read the kubeconfig {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The Secret's data holds no kubeconfig text.
    #[error("{origin}: its data key `kubeconfig` {why}")]
    Data {
        /// The Secret.
        origin: Origin,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The file (or Secret) holds no kubeconfig.
    #[error("{origin} is not a kubeconfig")]
    Parse {
        /// The file or Secret.
        origin: Origin,
        /// The parse error.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The file asks for something a member's kubeconfig may not (see the module).
    #[error(
        "the kubeconfig {origin} is refused: {entry} uses `{field}` ({why}); member clusters take inline credentials only"
    )]
    Refused {
        /// The file or Secret.
        origin: Origin,
        /// `user NAME` or `cluster NAME`.
        entry: String,
        /// The field refused, as written in a kubeconfig.
        field: &'static str,
        /// What it would have made the host do.
        why: &'static str,
    },
    /// kube could not make a client configuration of it (no server, a bad CA, ...).
    #[error("the kubeconfig {origin} does not configure a client")]
    Config {
        /// The file or Secret.
        origin: Origin,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
}

/// Reads `path` and refuses it if any entry runs a program, calls an auth provider or reads
/// another file.
pub fn read_checked(path: &Path) -> Result<Kubeconfig, KubeconfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| KubeconfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_checked(&Origin::File(path.to_owned()), &text)
}

/// Parses `text` (from `origin`) and refuses it as [`read_checked`] does.
pub fn parse_checked(origin: &Origin, text: &str) -> Result<Kubeconfig, KubeconfigError> {
    let config = Kubeconfig::from_yaml(text).map_err(|source| KubeconfigError::Parse {
        origin: origin.clone(),
        source,
    })?;
    check(&config).map_err(|(entry, field, why)| KubeconfigError::Refused {
        origin: origin.clone(),
        entry,
        field,
        why,
    })?;
    Ok(config)
}

/// The client configuration of a checked kubeconfig (its current context).
pub async fn client_config(
    origin: &Origin,
    kubeconfig: Kubeconfig,
) -> Result<kube::Config, KubeconfigError> {
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| KubeconfigError::Config {
            origin: origin.clone(),
            source,
        })
}

/// The first refused entry: its name, the field and what it would have done.
fn check(config: &Kubeconfig) -> Result<(), (String, &'static str, &'static str)> {
    for named in &config.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let entry = || format!("user {:?}", named.name);
        let refused = [
            (user.exec.is_some(), "exec", "it runs a program"),
            (
                user.auth_provider.is_some(),
                "auth-provider",
                "it calls an auth provider",
            ),
            (
                user.token_file.is_some(),
                "tokenFile",
                "it reads a local file",
            ),
            (
                user.client_certificate.is_some(),
                "client-certificate",
                "it reads a local file",
            ),
            (
                user.client_key.is_some(),
                "client-key",
                "it reads a local file",
            ),
        ];
        if let Some((_, field, why)) = refused.into_iter().find(|(set, ..)| *set) {
            return Err((entry(), field, why));
        }
    }
    for named in &config.clusters {
        if named
            .cluster
            .as_ref()
            .is_some_and(|c| c.certificate_authority.is_some())
        {
            let entry = format!("cluster {:?}", named.name);
            return Err((entry, "certificate-authority", "it reads a local file"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("member-a.yaml");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        (dir, path)
    }

    const HEAD: &str = "apiVersion: v1\nkind: Config\ncurrent-context: m\ncontexts:\n- name: m\n  context: {cluster: m, user: m}\n";

    #[test]
    fn an_inline_token_and_server_are_accepted() {
        let (_dir, path) = written(&format!(
            "{HEAD}clusters:\n- name: m\n  cluster: {{server: 'https://10.0.0.1:6443', insecure-skip-tls-verify: true}}\nusers:\n- name: m\n  user: {{token: abc}}\n"
        ));
        assert!(read_checked(&path).is_ok());
    }

    #[test]
    fn an_exec_plugin_is_refused_naming_the_file_and_the_user() {
        let (_dir, path) = written(&format!(
            "{HEAD}clusters:\n- name: m\n  cluster: {{server: 'https://10.0.0.1:6443'}}\nusers:\n- name: m\n  user:\n    exec: {{apiVersion: client.authentication.k8s.io/v1, command: /bin/steal}}\n"
        ));
        let err = read_checked(&path).err().map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("member-a.yaml"), "{err}");
        assert!(err.contains("user \"m\" uses `exec`"), "{err}");
    }

    #[test]
    fn an_auth_provider_and_local_files_are_refused() {
        for (user, cluster, field) in [
            (
                "{auth-provider: {name: oidc}}",
                "{server: 'https://x'}",
                "auth-provider",
            ),
            (
                "{tokenFile: /etc/passwd}",
                "{server: 'https://x'}",
                "tokenFile",
            ),
            (
                "{token: t}",
                "{server: 'https://x', certificate-authority: /etc/ca.pem}",
                "certificate-authority",
            ),
        ] {
            let (_dir, path) = written(&format!(
                "{HEAD}clusters:\n- name: m\n  cluster: {cluster}\nusers:\n- name: m\n  user: {user}\n"
            ));
            let err = read_checked(&path)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(&format!("`{field}`")), "{field}: {err}");
        }
    }
}
