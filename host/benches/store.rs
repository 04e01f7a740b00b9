//! The cache's memory per object: a Blog's four objects (the Blog, its Deployment, Service and
//! ConfigMap, as the API server serves them, managedFields included) decoded from watch-event
//! JSON into the four stores `weir run` keeps, at 10,000 and at 100,000 Blogs.
//!
//! Prints, per step, the resident set growth per cached object (the marginal cost the host pays,
//! allocator overhead included), the bytes the stores report (`weir_cached_bytes`) and the JSON
//! they keep, per object; then the resident set growth of a relist of every kind (the watch
//! restarting: the whole list read again while the old contents serve).
//!
//! `cargo bench -p weir --bench store --profile dev`; `WEIR_STORE_BLOGS` (default
//! `10000,100000`) sets the steps. Run alone: the figures are this process's resident set.

use kube::runtime::watcher;
use serde_json::{Value, json};
use weir::plugin::ResourceKind;
use weir::runtime::cache::{CachedObject, Incoming, Store};

mod resident;
use resident::rss_bytes;

fn uid(kind: u8, i: usize) -> String {
    format!("{kind:08x}-0000-4000-8000-{i:012x}")
}

fn managed(manager: &str, api_version: &str, fields: Value) -> Value {
    json!({"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": fields,
           "manager": manager, "operation": "Apply", "time": "2026-12-02T06:13:04Z"})
}

fn child_meta(i: usize, kind: u8, name: String, fields: Value, api_version: &str) -> Value {
    let blog = format!("blog-{i}");
    json!({
        "annotations": {"weir.dev/manifest-hash": format!("{:016x}", i * 7 + kind as usize)},
        "creationTimestamp": "2026-12-02T06:13:04Z",
        "generation": 1,
        "labels": {"app.kubernetes.io/instance": blog, "app.kubernetes.io/managed-by": "weir",
                   "app.kubernetes.io/name": "blog", "weir.dev/parent-uid": uid(0, i)},
        "managedFields": [managed("weir", api_version, fields)],
        "name": name,
        "namespace": "default",
        "ownerReferences": [{"apiVersion": "weir.dev/v1alpha1", "blockOwnerDeletion": true,
                             "controller": true, "kind": "Blog", "name": blog, "uid": uid(0, i)}],
        "resourceVersion": format!("{}", i * 4 + kind as usize),
        "uid": uid(kind, i),
    })
}

/// The Blog `i`'s four objects as a watch serves them: Blog, Deployment, Service, ConfigMap.
fn served(i: usize) -> [String; 4] {
    let blog = format!("blog-{i}");
    let condition = |t: &str, reason: &str, message: &str| {
        json!({"lastTransitionTime": "2026-12-02T06:13:05Z", "message": message,
               "observedGeneration": 1, "reason": reason, "status": "True", "type": t})
    };
    let parent = json!({
        "apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
        "metadata": {"creationTimestamp": "2026-12-02T06:13:04Z",
            "finalizers": ["weir.dev/blog-cleanup"], "generation": 1,
            "managedFields": [managed("weir", "weir.dev/v1alpha1",
                json!({"f:status": {"f:conditions": {}, "f:observedGeneration": {}, "f:readyReplicas": {}}}))],
            "name": blog, "namespace": "default", "resourceVersion": format!("{}", i * 4),
            "uid": uid(0, i)},
        "spec": {"replicas": 1, "title": format!("Field notes {i}")},
        "status": {"conditions": [
            condition("Ready", "ReplicasReady", "1 of 1 replicas ready"),
            condition("Reconciled", "Reconciled", "children are as desired")],
            "observedGeneration": 1, "readyReplicas": 1},
    });
    let labels = json!({"app.kubernetes.io/instance": blog, "app.kubernetes.io/managed-by": "weir",
                        "app.kubernetes.io/name": "blog"});
    let selector = json!({"app.kubernetes.io/instance": blog, "app.kubernetes.io/name": "blog"});
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": child_meta(i, 1, blog.clone(), json!({"f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {}}, "f:spec": {"f:containers": {}, "f:volumes": {}}}}}), "apps/v1"),
        "spec": {"progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": selector},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
            "template": {"metadata": {"annotations": {"weir.dev/page-hash": format!("{i:016x}")}, "labels": labels},
                "spec": {"containers": [{"image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "name": "web",
                    "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}], "resources": {},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "volumeMounts": [{"mountPath": "/usr/share/nginx/html", "name": "page", "readOnly": true}]}],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                    "securityContext": {}, "terminationGracePeriodSeconds": 30,
                    "volumes": [{"configMap": {"defaultMode": 420, "name": format!("{blog}-page")}, "name": "page"}]}}},
        "status": {"availableReplicas": 1, "conditions": [
            {"lastTransitionTime": "2026-12-02T06:13:05Z", "lastUpdateTime": "2026-12-02T06:13:05Z",
             "message": "Deployment has minimum availability.", "reason": "MinimumReplicasAvailable", "status": "True", "type": "Available"},
            {"lastTransitionTime": "2026-12-02T06:13:04Z", "lastUpdateTime": "2026-12-02T06:13:05Z",
             "message": format!("ReplicaSet \"{blog}-6c9fc549c\" has successfully progressed."), "reason": "NewReplicaSetAvailable", "status": "True", "type": "Progressing"}],
            "observedGeneration": 1, "readyReplicas": 1, "replicas": 1, "updatedReplicas": 1},
    });
    let ip = format!("10.96.{}.{}", i / 250 % 250, i % 250 + 2);
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": child_meta(i, 2, blog.clone(), json!({"f:spec": {"f:ports": {}, "f:selector": {}}}), "v1"),
        "spec": {"clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
            "selector": selector, "sessionAffinity": "None", "type": "ClusterIP"},
        "status": {"loadBalancer": {}},
    });
    let page = format!(
        "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>Field notes {i}</title></head>\n<body><h1>Field notes {i}</h1></body>\n</html>\n"
    );
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "data": {"index.html": page},
        "metadata": child_meta(i, 3, format!("{blog}-page"), json!({"f:data": {"f:index.html": {}}}), "v1"),
    });
    [parent, deployment, service, config_map].map(|o| o.to_string())
}

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// The four stores of a Blog host.
struct Stores(Vec<Store>);

impl Stores {
    fn new() -> Self {
        let kinds = [
            kind("weir.dev", "v1alpha1", "Blog", "blogs"),
            kind("apps", "v1", "Deployment", "deployments"),
            kind("", "v1", "Service", "services"),
            kind("", "v1", "ConfigMap", "configmaps"),
        ];
        Self(kinds.map(Store::new).into())
    }

    /// Blogs `from..to` arrive, each object as one event; returns the JSON bytes cached.
    fn fill(&self, blogs: std::ops::Range<usize>, initial: bool) -> anyhow::Result<usize> {
        let mut json = 0;
        for i in blogs {
            for (store, text) in self.0.iter().zip(served(i)) {
                let incoming: Incoming = serde_json::from_str(&text)?;
                let obj = CachedObject::new(incoming, store.packing());
                json += obj.json().len();
                store.apply(if initial {
                    watcher::Event::InitApply(obj)
                } else {
                    watcher::Event::Apply(obj)
                });
            }
        }
        Ok(json)
    }

    fn bytes(&self) -> usize {
        self.0.iter().map(Store::bytes).sum()
    }

    fn len(&self) -> usize {
        self.0.iter().map(Store::len).sum()
    }

    fn relist(&self, blogs: usize) -> anyhow::Result<()> {
        for store in &self.0 {
            store.apply(watcher::Event::Init);
        }
        self.fill(0..blogs, true)?;
        for store in &self.0 {
            store.apply(watcher::Event::InitDone);
        }
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let steps: Vec<usize> = std::env::var("WEIR_STORE_BLOGS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|n| n.trim().parse())
        .collect::<Result<_, _>>()?;
    let sizes: Vec<usize> = served(0).iter().map(String::len).collect();
    println!(
        "served JSON of one Blog's objects (Blog, Deployment, Service, ConfigMap): {sizes:?} bytes"
    );
    let stores = Stores::new();
    let start = rss_bytes();
    let (mut blogs, mut json, mut rss) = (0, 0, start);
    println!(
        "| Blogs | objects | RSS growth MiB | RSS B/object, this step | reported B/object | JSON B/object |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for &step in &steps {
        json += stores.fill(blogs..step, false)?;
        let now = rss_bytes();
        let objects = stores.len();
        let added = (step - blogs) * 4;
        println!(
            "| {step} | {objects} | {:.1} | {} | {} | {} |",
            (now - start) as f64 / (1 << 20) as f64,
            (now.saturating_sub(rss)) as usize / added.max(1),
            stores.bytes() / objects.max(1),
            json / objects.max(1),
        );
        (blogs, rss) = (step, now);
    }
    stores.relist(blogs)?;
    let after = rss_bytes();
    println!(
        "relist of all {} objects: RSS +{:.1} MiB ({} B per object), {} objects cached after it",
        stores.len(),
        after.saturating_sub(rss) as f64 / (1 << 20) as f64,
        after.saturating_sub(rss) as usize / stores.len().max(1),
        stores.len(),
    );
    Ok(())
}
