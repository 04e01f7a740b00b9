//! Least privilege proven the other way: without any one rule of a role, the host meets a 403
//! naming that rule (so no rule is there for nothing).

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::cluster::Cluster;
use super::eventually;
use super::pod::Pod;

/// A ClusterRole (`namespace: None`) or a Role whose rules are put to the test.
pub struct Role<'a> {
    /// `ClusterRole` or `Role`.
    pub kind: &'a str,
    /// Its name.
    pub name: &'a str,
    /// A Role's namespace.
    pub namespace: Option<&'a str>,
}

impl Role<'_> {
    fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: "rbac.authorization.k8s.io".into(),
            version: "v1".into(),
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: self.kind.into(),
            plural: format!("{}s", self.kind.to_lowercase()),
        };
        match self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        }
    }
}

/// For each rule of `role` in turn: the role without it, a new Blog (and whatever `fresh` makes
/// anew), the pod started anew until a request is refused with a 403 naming the rule, the pod
/// stopped, the rule put back. Prints one line per rule and `N of N rules of KIND NAME needed`;
/// returns N.
pub async fn every_rule_is_needed(
    cluster: &Cluster,
    pod: &Pod,
    role: Role<'_>,
    fresh: impl Fn(),
) -> usize {
    let api = role.api(&cluster.client);
    let stored = api.get(role.name).await.unwrap();
    let rules = stored.data["rules"].as_array().unwrap().clone();
    let set_rules = async |rules: &[Value]| {
        let patch = json!({"rules": rules});
        api.patch(role.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    };
    let blogs = cluster.blogs();
    let mut needed = 0;
    for (i, rule) in rules.iter().enumerate() {
        let mut fewer = rules.clone();
        fewer.remove(i);
        set_rules(&fewer).await;
        cluster.emulator.clear_requests();
        let blog = format!("probe-{}-{i}", role.name);
        let manifest = json!({"apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
            "metadata": {"name": blog, "namespace": "default"}, "spec": {"title": blog, "replicas": 1}});
        blogs
            .create(
                &Default::default(),
                &serde_json::from_value(manifest).unwrap(),
            )
            .await
            .unwrap();
        fresh();
        pod.start();
        let refused = eventually(
            &format!(
                "a 403 naming rule {i} of {} {} ({rule})",
                role.kind, role.name
            ),
            pod,
            async || {
                cluster.emulator.requests().into_iter().find_map(|r| {
                    let denied = r.denied.filter(|_| r.status == 403)?;
                    names_rule(&denied, rule).then_some(denied)
                })
            },
        )
        .await;
        println!("without rule {i} of {} {}: {refused}", role.kind, role.name);
        needed += 1;
        pod.stop();
        set_rules(&rules).await;
    }
    println!(
        "{needed} of {} rules of {} {} needed",
        rules.len(),
        role.kind,
        role.name
    );
    assert_eq!(needed, rules.len());
    needed
}

/// Whether the denial names `rule`: one of its resources in one of its groups.
fn names_rule(denied: &str, rule: &Value) -> bool {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    strings(&rule["apiGroups"]).iter().any(|group| {
        strings(&rule["resources"]).iter().any(|resource| {
            denied.contains(&format!("resource {resource:?} in API group {group:?}"))
        })
    })
}
