//! A plugin is given its children's JSON byte for byte as the host gave it before it cached
//! bytes (the object as served, decoded by kube and written out again, managedFields dropped).

use serde_json::{Value, json};
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds};

/// What the host gave a plugin for an object served as `served`, before the compact cache.
fn given_before(served: &str) -> anyhow::Result<String> {
    let mut obj: kube::api::DynamicObject = serde_json::from_str(served)?;
    obj.metadata.managed_fields = None;
    Ok(serde_json::to_string(&obj)?)
}

#[tokio::test]
async fn a_plugin_is_given_its_children_as_served_less_managed_fields() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("scenario").await?;
    let parents = env.api(&kinds::scenario());
    env.create(
        &kinds::scenario(),
        "echo",
        json!({"configMaps": ["a", "b"], "data": {"page": "<h1>\"quoted\" & más</h1>"}, "echo": true}),
    )
    .await?;
    let client = env.client.clone();
    let namespace = env.namespace.clone();
    // Once the children stop changing, the last reconcile was given their served versions.
    let compared = eventually("the given children match the served ones", CONVERGE, || {
        let (parents, client, namespace) = (parents.clone(), client.clone(), namespace.clone());
        async move {
            let parent = parents.get("echo").await.ok()?;
            let given: Vec<String> =
                serde_json::from_value(parent.data["status"]["given"].clone()).ok()?;
            if given.len() != 2 {
                return None;
            }
            let mut served = Vec::new();
            for text in &given {
                let name = serde_json::from_str::<Value>(text).ok()?["metadata"]["name"]
                    .as_str()?
                    .to_owned();
                let path = format!("/api/v1/namespaces/{namespace}/configmaps/{name}");
                let request = http::Request::get(path).body(Vec::new()).ok()?;
                let text = client.request_text(request).await.ok()?;
                assert!(
                    text.contains("managedFields"),
                    "served with managedFields: {text}"
                );
                served.push(given_before(&text).ok()?);
            }
            (given == served).then_some(given)
        }
    })
    .await?;
    for text in &compared {
        assert!(!text.contains("managedFields"), "{text}");
    }
    host.shutdown().await;
    Ok(())
}
