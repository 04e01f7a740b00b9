//! The checked-in Blog CRD (`deploy/crd/blog.yaml`) is what the Rust type generates.

#![expect(
    clippy::unwrap_used,
    reason = "a test should stop loudly at the first unexpected error"
)]

use std::path::PathBuf;

use kube::CustomResourceExt;
use weir_plugin_blog::Blog;

const REGENERATE: &str = "WEIR_BLESS=1 cargo test -p weir-plugin-blog --test crd";

fn checked_in() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crd/blog.yaml")
}

fn generated() -> String {
    let yaml = serde_saphyr::to_string(&Blog::crd()).unwrap();
    format!(
        "# Generated from plugins/blog/src/types.rs; do not edit. Regenerate: {REGENERATE}\n{yaml}"
    )
}

#[test]
fn the_checked_in_crd_matches_the_rust_type() {
    let path = checked_in();
    let want = generated();
    if std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale or missing; regenerate it with\n    {REGENERATE}",
        path.display()
    );
}

#[test]
fn the_crd_requires_a_title_and_defaults_replicas_and_image() {
    let crd = serde_json::to_value(Blog::crd()).unwrap();
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], "v1alpha1");
    assert_eq!(version["subresources"]["status"], serde_json::json!({}));
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["required"], serde_json::json!(["title"]));
    assert_eq!(spec["properties"]["replicas"]["default"], 1);
    assert_eq!(
        spec["properties"]["replicas"]["minimum"].as_f64(),
        Some(0.0)
    );
    assert_eq!(
        spec["properties"]["image"]["default"],
        weir_plugin_blog::DEFAULT_IMAGE
    );
    assert_eq!(spec["properties"]["title"]["minLength"], 1);
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["plural"], "blogs");
}
