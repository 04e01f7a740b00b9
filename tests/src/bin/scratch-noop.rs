//! Scratch: is a repeated identical server-side apply a no-op on the emulator?
use kube::api::{Api, Patch, PatchParams, DynamicObject};
use serde_json::json;
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let em = weir_emulator::Emulator::start(Default::default()).await?;
    let blog: weir_plugin_blog::Blog = serde_json::from_value(json!({"apiVersion":"weir.dev/v1alpha1","kind":"Blog","metadata":{"name":"b","namespace":"default","uid":"u1","generation":1},"spec":{"title":"t","replicas":2}}))?;
    let out = weir_guest_sdk::testing::reconcile::<weir_plugin_blog::BlogReconciler>(&blog, vec![]).map_err(|e| anyhow::anyhow!("{e}"))?;
    for child in out.children.iter() {
        let kind = child["kind"].as_str().unwrap();
        let (g, v) = match kind { "Deployment" => ("apps", "v1"), _ => ("", "v1") };
        let ar = weir::plugin::ResourceKind { group: g.into(), version: v.into(), kind: kind.into(), plural: format!("{}s", kind.to_lowercase()), namespaced: true }.api_resource();
        let api: Api<DynamicObject> = Api::namespaced_with(em.client(), "default", &ar);
        let name = child["metadata"]["name"].as_str().unwrap();
        let pp = PatchParams::apply("m").force();
        let a = api.patch(name, &pp, &Patch::Apply(child)).await?;
        let b = api.patch(name, &pp, &Patch::Apply(child)).await?;
        println!("{kind} rv {:?} -> {:?}", a.metadata.resource_version, b.metadata.resource_version);
        if a.metadata.resource_version != b.metadata.resource_version { println!("{}\n{}", serde_json::to_string(&a)?, serde_json::to_string(&b)?); }
    }
    Ok(())
}
