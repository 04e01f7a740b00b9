//! Native tests of the Blog logic, through the SDK's harness (the component's own JSON path).

#![expect(
    clippy::unwrap_used,
    reason = "a test should stop loudly at the first unexpected error"
)]

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use serde_json::{Value, json};
use weir_guest_sdk::testing::{self, Reconciled};
use weir_guest_sdk::{Child, Error, Finalize, Requeue};

use crate::{
    Blog, BlogReconciler, BlogSpec, BlogStatus, DEFAULT_IMAGE, FINALIZER, PAGE_HASH_ANNOTATION,
};

/// Chainable test Blogs: `Blog::test().replicas(5)`.
impl Blog {
    fn test() -> Self {
        let mut blog = Blog::new(
            "my-blog",
            BlogSpec {
                title: "Hello".to_owned(),
                replicas: 1,
                image: DEFAULT_IMAGE.to_owned(),
                theme: None,
                posts_selector: None,
            },
        );
        blog.metadata.namespace = Some("default".to_owned());
        blog.metadata.generation = Some(1);
        blog
    }

    fn title(mut self, title: &str) -> Self {
        self.spec.title = title.to_owned();
        self
    }

    fn replicas(mut self, replicas: i32) -> Self {
        self.spec.replicas = replicas;
        self
    }

    fn image(mut self, image: &str) -> Self {
        self.spec.image = image.to_owned();
        self
    }

    fn generation(mut self, generation: i64) -> Self {
        self.metadata.generation = Some(generation);
        self
    }

    fn named(mut self, name: &str) -> Self {
        self.metadata.name = Some(name.to_owned());
        self
    }

    fn reconcile(&self) -> Reconciled {
        testing::reconcile::<BlogReconciler>(self, vec![]).unwrap()
    }

    fn reconcile_with(&self, observed: Vec<Child>) -> Reconciled {
        testing::reconcile::<BlogReconciler>(self, observed).unwrap()
    }

    fn reconcile_err(&self) -> Error {
        testing::reconcile::<BlogReconciler>(self, vec![]).unwrap_err()
    }
}

fn deployment(out: &Reconciled, name: &str) -> Deployment {
    out.children.get::<Deployment>(name).unwrap().unwrap()
}

fn page_of(out: &Reconciled) -> String {
    out.children
        .get::<ConfigMap>("my-blog-page")
        .unwrap()
        .unwrap()
        .data
        .unwrap()["index.html"]
        .clone()
}

fn hash_of(out: &Reconciled) -> String {
    let template = deployment(out, "my-blog").spec.unwrap().template;
    template.metadata.unwrap().annotations.unwrap()[PAGE_HASH_ANNOTATION].clone()
}

fn status_of(out: &Reconciled) -> BlogStatus {
    serde_json::from_value(out.status.clone().unwrap()).unwrap()
}

/// The Deployment as the cluster would report it, with `ready` pods ready.
fn ready(mut deployment: Deployment, ready: i32) -> Child {
    deployment.status = Some(DeploymentStatus {
        ready_replicas: Some(ready),
        ..DeploymentStatus::default()
    });
    deployment.into()
}

#[test]
fn a_new_blog_gets_a_page_a_deployment_and_a_service() {
    let out = Blog::test().reconcile();
    assert_eq!(out.children.len(), 3);
    assert!(
        out.children
            .get::<ConfigMap>("my-blog-page")
            .unwrap()
            .is_some()
    );
    assert!(out.children.get::<Deployment>("my-blog").unwrap().is_some());
    assert!(out.children.get::<Service>("my-blog").unwrap().is_some());
    assert_eq!(out.requeue, Requeue::Done);
}

#[test]
fn children_carry_the_labels_but_leave_namespace_and_owners_to_the_host() {
    let out = Blog::test().reconcile();
    for child in out.children.iter() {
        let meta = &child["metadata"];
        assert_eq!(
            meta["labels"],
            json!({"app.kubernetes.io/name": "blog", "app.kubernetes.io/instance": "my-blog",
                   "app.kubernetes.io/managed-by": "weir"})
        );
        assert_eq!(meta.get("namespace"), None, "{child}");
        assert_eq!(meta.get("ownerReferences"), None, "{child}");
    }
}

#[test]
fn the_deployment_takes_replicas_and_image_from_the_spec_and_mounts_the_page() {
    let out = Blog::test().replicas(5).image("nginx:1.28").reconcile();
    let spec = deployment(&out, "my-blog").spec.unwrap();
    assert_eq!(spec.replicas, Some(5));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some("nginx:1.28"));
    assert_eq!(
        pod.containers[0].volume_mounts.as_ref().unwrap()[0].mount_path,
        "/usr/share/nginx/html"
    );
    assert_eq!(
        pod.volumes.unwrap()[0].config_map.as_ref().unwrap().name,
        "my-blog-page"
    );
}

#[test]
fn the_service_selects_the_deployments_pods() {
    let out = Blog::test().reconcile();
    let selector = out
        .children
        .get::<Service>("my-blog")
        .unwrap()
        .unwrap()
        .spec
        .unwrap()
        .selector
        .unwrap();
    let pods = deployment(&out, "my-blog")
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    assert!(selector.iter().all(|(k, v)| pods.get(k) == Some(v)));
}

#[test]
fn replicas_and_image_default_when_the_spec_omits_them() {
    let parent = json!({"apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
                        "metadata": {"name": "my-blog", "namespace": "default"}, "spec": {"title": "Hi"}});
    let out = testing::reconcile::<BlogReconciler>(&parent, vec![]).unwrap();
    let spec = deployment(&out, "my-blog").spec.unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(
        spec.template.spec.unwrap().containers[0].image.as_deref(),
        Some(DEFAULT_IMAGE)
    );
}

#[test]
fn a_title_change_changes_the_page_and_rolls_the_pods() {
    let before = Blog::test().reconcile();
    let after = Blog::test().title("Goodbye").reconcile();
    assert!(page_of(&after).contains("<h1>Goodbye</h1>"));
    assert_ne!(hash_of(&before), hash_of(&after));
}

#[test]
fn the_page_hash_is_the_first_16_hex_digits_of_the_pages_sha256() {
    // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
    assert_eq!(crate::page_hash("abc"), "ba7816bf8f01cfea");
    assert_eq!(
        hash_of(&Blog::test().reconcile()),
        crate::page_hash(&page_of(&Blog::test().reconcile()))
    );
}

#[test]
fn the_title_is_html_escaped_like_pythons_html_escape() {
    let out = Blog::test().title(r#"<b>"Tom" & 'Jerry'</b>"#).reconcile();
    assert!(
        page_of(&out)
            .contains("<h1>&lt;b&gt;&quot;Tom&quot; &amp; &#x27;Jerry&#x27;&lt;/b&gt;</h1>")
    );
}

#[test]
fn a_hand_edited_deployment_is_put_back() {
    let blog = Blog::test().replicas(2);
    let desired = blog.reconcile();
    let mut edited = deployment(&desired, "my-blog");
    let spec = edited.spec.as_mut().unwrap();
    spec.replicas = Some(7);
    spec.template.spec.as_mut().unwrap().containers[0].image = Some("evil:latest".to_owned());
    spec.template.metadata.as_mut().unwrap().annotations = None;
    let out = blog.reconcile_with(vec![edited.into()]);
    assert_eq!(out.children, desired.children);
}

#[test]
fn not_ready_until_the_deployment_reports_enough_ready_pods() {
    let blog = Blog::test().replicas(3);
    let made = deployment(&blog.reconcile(), "my-blog");
    let status = status_of(&blog.reconcile_with(vec![ready(made, 2)]));
    assert_eq!(status.ready_replicas, 2);
    assert_eq!(status.conditions[0].status, "False");
    assert_eq!(status.conditions[0].reason, "ReplicasNotReady");
    assert_eq!(status.conditions[0].message, "2 of 3 replicas ready");
}

#[test]
fn ready_once_the_deployment_reports_all_pods_ready() {
    let blog = Blog::test().replicas(3).generation(4);
    let made = deployment(&blog.reconcile(), "my-blog");
    let out = blog.reconcile_with(vec![ready(made, 3)]);
    let status = status_of(&out);
    assert_eq!(status.observed_generation, Some(4));
    assert_eq!(status.ready_replicas, 3);
    assert_eq!(
        (
            status.conditions[0].type_.as_str(),
            status.conditions[0].status.as_str()
        ),
        ("Ready", "True")
    );
    assert_eq!(
        status.conditions[0].last_transition_time, None,
        "the host sets the time"
    );
    assert_eq!(out.requeue, Requeue::Done);
}

#[test]
fn a_new_blog_has_no_ready_pods_yet() {
    let status = status_of(&Blog::test().reconcile());
    assert_eq!(status.ready_replicas, 0);
    assert_eq!(status.conditions[0].status, "False");
}

#[test]
fn desired_children_fed_back_give_the_same_answer() {
    let blog = Blog::test().replicas(2);
    let first = blog.reconcile();
    let again = blog.reconcile_with(first.as_observed());
    assert_eq!(again, first);
}

#[test]
fn a_blog_without_a_title_is_a_permanent_error_naming_the_field() {
    let parent = json!({"apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
                        "metadata": {"name": "broken", "namespace": "default"}, "spec": {"replicas": 2}});
    let err = testing::reconcile::<BlogReconciler>(&parent, vec![]).unwrap_err();
    assert!(!err.is_transient());
    assert!(
        err.message().contains("spec") && err.message().contains("title"),
        "{err}"
    );
    assert!(err.message().contains("default/broken"), "{err}");
}

#[test]
fn an_empty_title_a_negative_replica_count_or_an_empty_image_is_refused() {
    for (blog, field) in [
        (Blog::test().title(""), "spec.title"),
        (Blog::test().replicas(-1), "spec.replicas"),
        (Blog::test().image(""), "spec.image"),
    ] {
        let err = blog.reconcile_err();
        assert!(
            matches!(err, Error::Permanent(_)) && err.message().contains(field),
            "{err}"
        );
    }
}

#[test]
fn a_name_that_cannot_name_a_service_is_refused() {
    for name in ["1blog", "my.blog", "Blog", &"b".repeat(64)] {
        let err = Blog::test().named(name).reconcile_err();
        assert!(err.message().contains("metadata.name"), "{name}: {err}");
    }
    assert!(
        testing::reconcile::<BlogReconciler>(&Blog::test().named(&"b".repeat(63)), vec![]).is_ok()
    );
}

#[test]
fn a_deleted_blog_is_cleaned_up_at_once() {
    let blog = Blog::test();
    let observed = blog.reconcile().as_observed();
    assert_eq!(
        testing::finalize::<BlogReconciler>(&blog, observed).unwrap(),
        Finalize::Complete
    );
}

#[test]
fn describe_declares_the_blog_kind_its_children_and_the_finalizer() {
    let info = testing::describe::<BlogReconciler>();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("blog", env!("CARGO_PKG_VERSION"))
    );
    let parent = &info.parent;
    assert_eq!(
        (
            parent.group.as_str(),
            parent.version.as_str(),
            parent.kind.as_str(),
            parent.plural.as_str()
        ),
        ("weir.dev", "v1alpha1", "Blog", "blogs")
    );
    assert!(parent.namespaced);
    let kinds: Vec<_> = info
        .children
        .iter()
        .map(|k| (k.group.as_str(), k.kind.as_str(), k.plural.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("", "ConfigMap", "configmaps"),
            ("apps", "Deployment", "deployments"),
            ("", "Service", "services")
        ]
    );
    let related: Vec<_> = info
        .related
        .iter()
        .map(|k| (k.group.as_str(), k.kind.as_str(), k.namespaced))
        .collect();
    assert_eq!(related, [("", "ConfigMap", true)]);
    assert_eq!(info.finalizer.as_deref(), Some(FINALIZER));
    // The CRD is the checked-in YAML; it must say what the Rust type generates.
    let crd: Value = serde_saphyr::from_str(info.crd.as_deref().unwrap()).unwrap();
    assert_eq!(crd["metadata"]["name"], "blogs.weir.dev");
    assert_eq!(
        crd,
        serde_json::to_value(<Blog as kube::CustomResourceExt>::crd()).unwrap()
    );
}

#[test]
fn the_readme_example_page_with_a_theme_and_two_posts_is_byte_for_byte_the_spec() {
    let posts = [
        crate::Post {
            title: "Hello".into(),
            body: "It works.".into(),
        },
        crate::Post {
            title: "Fish & Chips".into(),
            body: String::new(),
        },
    ];
    let page = crate::page_with("My Blog", Some("h1 { color: red; }"), &posts);
    assert_eq!(
        page,
        "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>My Blog</title>\
         <style>h1 { color: red; }</style></head>\n<body><h1>My Blog</h1>\n\
         <article><h2>Hello</h2><p>It works.</p></article>\n\
         <article><h2>Fish &amp; Chips</h2><p></p></article>\n</body>\n</html>\n"
    );
    assert_eq!(crate::page_hash(&page), "6c770a5379d13bee");
    assert_eq!(
        crate::page_with("My Blog", None, &[]),
        crate::page("My Blog")
    );
}
