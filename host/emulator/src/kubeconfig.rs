//! The kubeconfig an emulator writes: its URL, and the CA and admin token when it is secure.

use std::net::SocketAddr;

use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

use crate::state::auth::Auth;

/// `http://ADDR`, or `https://ADDR` when secure.
pub fn url_of(addr: SocketAddr, secure: bool) -> String {
    let scheme = if secure { "https" } else { "http" };
    format!("{scheme}://{addr}")
}

/// The kubeconfig of [`crate::Emulator::kubeconfig`]: one context, `weir-emulator`, at `url`.
pub fn kubeconfig_for(url: &str, auth: Option<&Auth>) -> Kubeconfig {
    let name = "weir-emulator".to_string();
    let (cluster, user) = match auth {
        Some(auth) => {
            use base64::Engine as _;
            let ca = base64::engine::general_purpose::STANDARD.encode(&auth.certificates.ca_pem);
            let user: AuthInfo =
                serde_json::from_value(serde_json::json!({"token": auth.admin_token()}))
                    .unwrap_or_default();
            let cluster = Cluster {
                server: Some(url.to_string()),
                certificate_authority_data: Some(ca),
                ..Cluster::default()
            };
            (cluster, user)
        }
        None => {
            let cluster = Cluster {
                server: Some(url.to_string()),
                insecure_skip_tls_verify: Some(true),
                ..Cluster::default()
            };
            (cluster, AuthInfo::default())
        }
    };
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: name.clone(),
            cluster: Some(cluster),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: name.clone(),
            auth_info: Some(user),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: name.clone(),
            context: Some(Context {
                cluster: name.clone(),
                user: Some(name.clone()),
                namespace: Some("default".into()),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(name),
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Kubeconfig::default()
    }
}
