//! The three children of a Blog, built from its spec and what it read (documented field by field in the README).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, PodSpec, PodTemplateSpec, Service,
    ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};

use crate::related::Post;

/// The page's key in the ConfigMap, and so its file name in the pod.
pub const PAGE_KEY: &str = "index.html";
/// The pod template annotation that changes whenever the page does.
pub const PAGE_HASH_ANNOTATION: &str = "weir.dev/page-hash";
/// Where the page is mounted: the document root of the default image.
pub const DOCUMENT_ROOT: &str = "/usr/share/nginx/html";

/// The names and labels every child of one Blog shares.
pub struct Names {
    /// The Blog's name; also the Deployment's and the Service's.
    pub blog: String,
}

impl Names {
    /// The ConfigMap's name.
    pub fn page(&self) -> String {
        format!("{}-page", self.blog)
    }

    /// What selectors match: stable for the Blog's life, as a selector must be.
    fn selector(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".to_owned(), "blog".to_owned()),
            ("app.kubernetes.io/instance".to_owned(), self.blog.clone()),
        ])
    }

    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.selector();
        labels.insert("app.kubernetes.io/managed-by".to_owned(), "weir".to_owned());
        // A second build that differs in one visible way, for the host's hot-swap test.
        if cfg!(feature = "hotswap-label") {
            labels.insert("weir.dev/hot-swapped".to_owned(), "v2".to_owned());
        }
        labels
    }

    fn meta(&self, name: String) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }
}

/// The page without theme or posts: a fixed template with the title HTML-escaped.
pub fn page(title: &str) -> String {
    page_with(title, None, &[])
}

/// The page with the theme's CSS inlined (when found) and the posts listed (README, *The page*).
pub fn page_with(title: &str, css: Option<&str>, posts: &[Post]) -> String {
    let title = escape_html(title);
    // `\3c ` is CSS's own escape of `<`: the CSS means the same and cannot close the element.
    let style = css.map_or_else(String::new, |css| {
        format!("<style>{}</style>", css.replace('<', "\\3c "))
    });
    let mut articles = String::new();
    if !posts.is_empty() {
        articles.push('\n');
        for post in posts {
            articles.push_str(&format!(
                "<article><h2>{}</h2><p>{}</p></article>\n",
                escape_html(&post.title),
                escape_html(&post.body)
            ));
        }
    }
    format!(
        "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>{title}</title>{style}</head>\n\
         <body><h1>{title}</h1>{articles}</body>\n</html>\n"
    )
}

/// Escapes the five characters Python's `html.escape(s, quote=True)` escapes,
/// the same way, so the Python and JS Blog plugins produce the same page.
fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#x27;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// First 16 lowercase hex digits of the SHA-256 of the page's UTF-8 bytes.
///
/// Putting it on the pod template makes a title change a template change, so
/// the Deployment rolls its pods onto the new page instead of serving a stale
/// mount until they happen to restart.
pub fn page_hash(page: &str) -> String {
    let digest = Sha256::digest(page.as_bytes());
    hex::encode(&digest[..8])
}

/// The ConfigMap holding the page.
pub fn config_map(names: &Names, page: &str) -> ConfigMap {
    ConfigMap {
        metadata: names.meta(names.page()),
        data: Some(BTreeMap::from([(PAGE_KEY.to_owned(), page.to_owned())])),
        ..ConfigMap::default()
    }
}

/// The Deployment serving the page with `replicas` pods of `image`.
pub fn deployment(names: &Names, image: &str, replicas: i32, page_hash: &str) -> Deployment {
    let container = Container {
        name: "web".to_owned(),
        image: Some(image.to_owned()),
        ports: Some(vec![ContainerPort {
            name: Some("http".to_owned()),
            container_port: 80,
            // A key of the ports list under server-side apply: older API servers
            // refuse an applied port without it, so never leave it to defaulting.
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        volume_mounts: Some(vec![VolumeMount {
            name: "page".to_owned(),
            mount_path: DOCUMENT_ROOT.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    };
    let volume = Volume {
        name: "page".to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: names.page(),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(names.labels()),
            annotations: Some(BTreeMap::from([(
                PAGE_HASH_ANNOTATION.to_owned(),
                page_hash.to_owned(),
            )])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            volumes: Some(vec![volume]),
            ..PodSpec::default()
        }),
    };
    Deployment {
        metadata: names.meta(names.blog.clone()),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(names.selector()),
                ..LabelSelector::default()
            },
            template,
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

/// The Service in front of the Deployment's pods, on port 80.
pub fn service(names: &Names) -> Service {
    Service {
        metadata: names.meta(names.blog.clone()),
        spec: Some(ServiceSpec {
            selector: Some(names.selector()),
            ports: Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port: 80,
                protocol: Some("TCP".to_owned()),
                target_port: Some(IntOrString::String("http".to_owned())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}
