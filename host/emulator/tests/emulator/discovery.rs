//! The emulator's discovery diffed against a real kube-apiserver's documents.
//!
//! `tests/discovery/` holds what a real server serves at `/api`, `/apis` and each
//! group-version's resource list, for the groups and kinds the emulator serves (its README
//! names the source). Every group, version and resource the emulator lists is compared field by
//! field (names, kinds, verbs, short names, categories, storage version hashes, subresources and
//! their kinds); what the real server lists beside them is a difference too. Each difference
//! that remains is in [`KNOWN`] with its reason, and an entry that no longer differs fails the
//! test, so the list stays true. The order of groups in `/apis` is not compared (kube-apiserver
//! orders them by an internal priority that clients do not read).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use weir_emulator::{Emulator, EmulatorConfig};

/// The differences that remain, each with why.
const KNOWN: &[(&str, &str)] = &[
    (
        "/apis networking.k8s.io: version v1beta1 is not served",
        "the emulator serves each group at its stable version only; networking.k8s.io/v1beta1 \
         holds IPAddress and ServiceCIDR, which it does not serve",
    ),
    (
        "/apis authentication.k8s.io: version v1alpha1 is not served",
        "the emulator serves each group at its stable version only",
    ),
    (
        "/apis authentication.k8s.io: version v1beta1 is not served",
        "the emulator serves each group at its stable version only",
    ),
    (
        "authentication.k8s.io/v1 tokenreviews: not served",
        "only the self-reviews of `kubectl auth whoami` and `can-i` are answered; no one asks \
         the emulator to review another client's token",
    ),
    (
        "authorization.k8s.io/v1 localsubjectaccessreviews: not served",
        "only the self-reviews of `kubectl auth can-i` are answered, not reviews of another user",
    ),
    (
        "authorization.k8s.io/v1 subjectaccessreviews: not served",
        "only the self-reviews of `kubectl auth can-i` are answered, not reviews of another user",
    ),
    (
        "v1 pods/attach: not served",
        "no container runs, so there is nothing to attach to",
    ),
    (
        "v1 pods/binding: not served",
        "the workload simulation places Pods itself; no scheduler binds them",
    ),
    (
        "v1 pods/ephemeralcontainers: not served",
        "no container runs, so there is nowhere to add an ephemeral one",
    ),
    (
        "v1 pods/eviction: not served",
        "there is no eviction API (PodDisruptionBudgets are stored, not enforced)",
    ),
    (
        "v1 pods/exec: not served",
        "no container runs, so there is nothing to exec in",
    ),
    (
        "v1 pods/portforward: not served",
        "no container listens, so there is nothing to forward to",
    ),
    (
        "v1 pods/proxy: not served",
        "no container listens, so there is nothing to proxy to",
    ),
    (
        "v1 services/proxy: not served",
        "no container listens behind a Service, so there is nothing to proxy to",
    ),
    (
        "v1 serviceaccounts/token: not served",
        "only a secure emulator issues tokens (and lists the subresource, checked below); the \
         default one has no tokens to check",
    ),
];

/// A real server's document, from `tests/discovery/`.
fn real(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/discovery")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (the real server's document)", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn get(em: &Emulator, path: &str) -> Value {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    em.client()
        .request::<Value>(req)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// The items of `list`, by their `key` field.
fn by<'a>(list: &'a Value, key: &str) -> BTreeMap<&'a str, &'a Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|v| (v[key].as_str().unwrap_or_default(), v))
        .collect()
}

/// The fields of `ours` and `theirs` that differ, as "field: emulator X, real Y" (a missing
/// field is `null`, which is how an omitted empty list reads).
fn field_diffs(what: &str, ours: &Value, theirs: &Value) -> Vec<String> {
    let fields = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut names = fields(ours);
    names.extend(fields(theirs));
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|f| ours.get(f) != theirs.get(f))
        .map(|f| {
            let show = |v: Option<&Value>| v.map_or("null".to_string(), Value::to_string);
            format!(
                "{what}: {f}: emulator {}, real {}",
                show(ours.get(&f)),
                show(theirs.get(&f))
            )
        })
        .collect()
}

/// The differences of one group-version's resource list (`gv` as in `groupVersion`).
fn resource_list_diffs(gv: &str, ours: &Value, theirs: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let strip = |doc: &Value| {
        let mut top = doc.clone();
        if let Some(m) = top.as_object_mut() {
            m.remove("resources");
        }
        top
    };
    out.extend(field_diffs(gv, &strip(ours), &strip(theirs)));
    let (mine, real) = (
        by(&ours["resources"], "name"),
        by(&theirs["resources"], "name"),
    );
    for (name, entry) in &mine {
        match real.get(name) {
            Some(r) => out.extend(field_diffs(&format!("{gv} {name}"), entry, r)),
            None => out.push(format!("{gv} {name}: not served by a real server")),
        }
    }
    // Only the subresources of the resources served here: a kind the emulator does not serve
    // at all is left out of the test data.
    out.extend(
        real.keys()
            .filter(|n| !mine.contains_key(*n))
            .map(|n| format!("{gv} {n}: not served")),
    );
    // kube-apiserver sorts a list's resources by name.
    let names: Vec<&str> = ours["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    if !names.is_sorted() {
        out.push(format!("{gv}: resources not sorted by name: {names:?}"));
    }
    out
}

/// Every difference between the emulator's discovery and the real server's documents.
async fn differences(em: &Emulator) -> Vec<String> {
    let mut out = field_diffs("/api", &without_address(get(em, "/api").await), &{
        without_address(real("api.json"))
    });
    let groups = get(em, "/apis").await;
    let real_groups = real("apis.json");
    out.extend(field_diffs(
        "/apis",
        &without_groups(&groups),
        &without_groups(&real_groups),
    ));
    let real_by_name = by(&real_groups["groups"], "name");
    let mut gvs = vec![("api__v1.json".to_string(), "/api/v1".to_string(), "v1")];
    for (name, group) in by(&groups["groups"], "name") {
        let Some(theirs) = real_by_name.get(name) else {
            out.push(format!("/apis {name}: not served by a real server"));
            continue;
        };
        let what = format!("/apis {name}");
        out.extend(field_diffs(
            &what,
            &without_versions(group),
            &without_versions(theirs),
        ));
        let (mine, real) = (
            by(&group["versions"], "version"),
            by(&theirs["versions"], "version"),
        );
        out.extend(
            real.keys()
                .filter(|v| !mine.contains_key(*v))
                .map(|v| format!("{what}: version {v} is not served")),
        );
        for (v, entry) in mine {
            let gv = entry["groupVersion"].as_str().unwrap_or_default();
            match real.get(v) {
                Some(r) => out.extend(field_diffs(&format!("{what} {v}"), entry, r)),
                None => out.push(format!(
                    "{what}: version {v} is not served by a real server"
                )),
            }
            gvs.push((format!("apis__{name}__{v}.json"), format!("/apis/{gv}"), gv));
        }
        // `/apis/{group}` is the group's entry of `/apis` as an APIGroup.
        let mut alone = get(em, &format!("/apis/{name}")).await;
        let kind = alone.as_object_mut().and_then(|m| {
            m.remove("apiVersion");
            m.remove("kind")
        });
        if kind != Some(Value::from("APIGroup")) || &alone != group {
            out.push(format!(
                "/apis/{name}: not the group's entry of /apis: {alone}"
            ));
        }
    }
    for (file, path, gv) in gvs {
        let ours = get(em, &path).await;
        out.extend(resource_list_diffs(gv, &ours, &real(&file)));
    }
    out
}

fn without_address(mut doc: Value) -> Value {
    // The address is the server's own; only its shape is compared.
    let addresses = doc["serverAddressByClientCIDRs"].as_array_mut();
    for a in addresses.into_iter().flatten() {
        a["serverAddress"] = Value::from("ADDRESS");
    }
    doc
}

fn without_groups(doc: &Value) -> Value {
    let mut top = doc.clone();
    if let Some(m) = top.as_object_mut() {
        m.remove("groups");
    }
    top
}

fn without_versions(group: &Value) -> Value {
    let mut top = group.clone();
    if let Some(m) = top.as_object_mut() {
        m.remove("versions");
    }
    top
}

#[tokio::test]
async fn discovery_matches_a_real_servers_documents_but_for_the_known_differences() {
    let em = Emulator::start(EmulatorConfig::default()).await.unwrap();
    let found = differences(&em).await;
    let unexplained: Vec<&String> = found
        .iter()
        .filter(|d| !KNOWN.iter().any(|(k, _)| k == d))
        .collect();
    let stale: Vec<&str> = KNOWN
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !found.iter().any(|d| d == k))
        .collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "differences from a real server without a reason in KNOWN:\n  {}\n\
         KNOWN entries that no longer differ (remove them):\n  {}",
        unexplained
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        stale.join("\n  ")
    );
}

#[tokio::test]
async fn a_secure_emulator_lists_the_service_account_token_subresource_as_a_real_server_does() {
    let em = Emulator::start(EmulatorConfig {
        secure: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let ours = get(&em, "/api/v1").await;
    let theirs = real("api__v1.json");
    let token = |doc: &Value| {
        by(&doc["resources"], "name")
            .get("serviceaccounts/token")
            .map(|v| (*v).clone())
    };
    assert_eq!(token(&ours), token(&theirs));
    assert!(token(&ours).is_some(), "{ours}");
}
