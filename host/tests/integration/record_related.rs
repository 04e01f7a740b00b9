//! `weir record` of Blogs that read a theme ConfigMap and posts (contract 0.2.0's related
//! objects), on the emulator with the host serving them: each fixture holds what its Blog
//! selected and nothing else, passes under `weir test`'s runner, and a theme edited in a fixture
//! changes the page the case gets.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};
use weir::manager::{Manager, ManagerConfig, PluginSource};
use weir::offline::{Failure, parse, run_dir};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin};
use weir_emulator::{Emulator, EmulatorConfig};

use crate::built;

fn blog() -> Plugin {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    engine
        .load_file(&built("blog.wasm"), Limits::default())
        .unwrap()
}

async fn config_map(api: &Api<ConfigMap>, name: &str, labels: Value, data: Value) {
    let cm = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels}, "data": data,
    }))
    .unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
}

/// Retries `f` every 100 ms until it yields, for at most 60 s (the host may share the machine).
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut f: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(t) = f().await {
            return t;
        }
        assert!(Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn recorded_blogs_carry_the_theme_and_posts_they_read_and_a_changed_theme_changes_the_page() {
    let emulator = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let client = emulator.client();
    let plugin = blog();
    let config = ManagerConfig {
        install_crds: true,
        ..ManagerConfig::default()
    };
    let source = PluginSource::Fixed(vec![plugin.clone()]);
    let host = Manager::start(client.clone(), source, config)
        .await
        .unwrap();

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    config_map(
        &cms,
        "red",
        json!({}),
        json!({"style.css": "h1{color:red}"}),
    )
    .await;
    for (name, blog) in [
        ("post-1", "themed"),
        ("post-2", "themed"),
        ("noise", "other"),
    ] {
        let post = json!({"title": name, "body": "text"});
        config_map(&cms, name, json!({"blog": blog}), post).await;
    }
    let blogs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &plugin.info().parent.api_resource(),
    );
    for (name, spec) in [
        (
            "themed",
            json!({"title": "Themed", "theme": "red",
                   "postsSelector": {"matchLabels": {"blog": "themed"}}}),
        ),
        ("plain", json!({"title": "Plain"})),
    ] {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec,
        }))
        .unwrap();
        // The host installs the CRD as it starts: create once the kind is served.
        eventually(&format!("Blog {name} created"), || async {
            blogs.create(&PostParams::default(), &obj).await.ok()
        })
        .await;
    }
    for page in ["themed-page", "plain-page"] {
        eventually(&format!("{page} written"), || async {
            cms.get_opt(page).await.ok().flatten()
        })
        .await;
    }
    host.shutdown().await;

    let cases = weir::record::read(&client, &plugin, Some("default"), false)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = weir::record::write_all(&plugin, &cases, dir.path()).unwrap();
    assert_eq!((report.written, report.failing), (2, 0));
    let file = dir.path().join("default_themed.yaml");
    let themed = parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let names: Vec<&str> = themed
        .related
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["red", "post-1", "post-2"], "what the Blog selected");
    assert!(!themed.observed.is_empty(), "the children are recorded too");
    let plain = std::fs::read_to_string(dir.path().join("default_plain.yaml")).unwrap();
    assert!(!plain.contains("related:"), "{plain}");

    let summary = run_dir(&plugin, dir.path()).unwrap();
    let failures: Vec<_> = summary.cases.iter().map(|c| &c.failures).collect();
    assert_eq!(
        (summary.passed(), summary.failed()),
        (2, 0),
        "{failures:#?}"
    );

    // The theme in the fixture is what the plugin reads: edited there, the page changes.
    let mut edited: Value = weir::yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edited["related"][0]["data"]["style.css"] = json!("h1{color:blue}");
    std::fs::write(&file, weir::yaml::to_string(&edited).unwrap()).unwrap();
    let summary = run_dir(&plugin, dir.path()).unwrap();
    assert_eq!(summary.passed(), 1);
    let case = summary.cases.iter().find(|c| c.file == file).unwrap();
    let page_changed = case.failures.iter().any(|f| match f {
        Failure::Changed { changes, text } => {
            text.contains("h1{color:blue}")
                && changes
                    .iter()
                    .any(|c| c.of == "ConfigMap" && c.name == "themed-page")
        }
        _ => false,
    });
    assert!(page_changed, "{:#?}", case.failures);
}
