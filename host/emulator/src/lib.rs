//! An embedded Kubernetes API server for tests and `weir dev`: real HTTP, real semantics, no cluster.
//!
//! The emulator serves the Kubernetes REST API on `127.0.0.1` from an in-memory store, so that
//! unmodified clients — kube's `Client`, `watcher` and `reflector`, and the real `kubectl` — work
//! against it.
//!
//! # Reading order
//! The modules are layered bottom-up, one folder per layer: each module imports only from the
//! layers listed before its own and from the modules listed before it in its layer, never from a
//! later one, so the crate reads in this order. Each layer's `mod.rs` lists its modules in order
//! and says what each is.
//!
//! 1. `wire` — one object and how it crosses the wire, with no store behind it: YAML bodies,
//!    JSON responses and query strings, paths into JSON objects, the field paths of
//!    `managedFields`, label and field selectors and KEP-5866's `shardSelector` (behind a flag),
//!    `stored` (an object kept as its JSON text, parsed again only where a reader looks inside),
//!    CRD `openAPIV3Schema` validation (422 with field paths, and pruning), the OpenAPI schemas
//!    of the built-in kinds (from k8s-openapi), protobuf bodies of the built-in kinds as JSON
//!    (through message descriptors generated from k8s-pb), failures as `Status`.
//! 2. `kinds` — the registry of served kinds (`kinds::resources`): built-ins (namespaces,
//!    configmaps, secrets, services, serviceaccounts, core and `events.k8s.io` events, pods,
//!    endpoints, persistentvolumeclaims, deployments, replicasets, statefulsets, daemonsets,
//!    jobs, cronjobs, endpointslices, ingresses, the RBAC kinds, poddisruptionbudgets, leases,
//!    priorityclasses, CRDs) plus every kind a CustomResourceDefinition declares, served as soon
//!    as the CRD is created; `discovery` and `openapi`, the documents kubectl reads from it
//!    (`/openapi/v3`, and `/openapi/v2` rewritten from the same schemas, in JSON or as gnostic
//!    protobuf).
//! 3. `store` — each object kept as its JSON text (`wire::stored`); one global, monotonic
//!    resourceVersion; uid, creationTimestamp, generation (bumped on spec changes only); a
//!    bounded event history for watch resumption; the indexes kept beside the objects so that no
//!    write scans a kind: `store::allocations` (the cluster IPs and node ports Services hold),
//!    `store::label_index` (Pods by label, Services by selector) and `store::terminating` (the
//!    namespaces being deleted, and which changed since the namespace controller looked).
//! 4. `write` — the rules of one write: `patch` (merge, JSON and strategic merge patches),
//!    `apply` (server-side apply with `managedFields`, conflicts and field removal), `track`
//!    (the `managedFields` of every other write: the writer owns what it changed, the entries
//!    it does not touch stay as stored), `crd` (a stored CRD registers its kinds), `gc`
//!    (finalizers, `deletionTimestamp`, Background/Foreground/Orphan propagation,
//!    owner-reference garbage collection), `namespace` (a deleted Namespace `Terminating`: new
//!    content refused, the namespace controller's pass over its content, `/finalize`),
//!    `defaults` (kube-apiserver's defaulting of the built-in kinds, one module per kind),
//!    `admission` (type checks, strict field validation of built-in kinds, CRD schemas); then
//!    `ops`, the writes themselves: create, update, patch, apply, delete, with optimistic
//!    concurrency and `DeleteOptions.preconditions`.
//! 5. `state` — what a running emulator holds beside its store: the public settings
//!    (`state::config`, with [`RequestRecord`]) and fault-injection rules with their middleware
//!    (`state::faults`), the last requests served, in a ring read by [`RequestCursor`]
//!    (`state::request_log`), the state file (`state::persist`: objects, CRDs and the
//!    resourceVersion counter; not the watch history), who is calling and what they may do on a
//!    secure emulator (`state::auth`: the generated CA and TLS listener, the admin and
//!    ServiceAccount tokens, and RBAC: a request's attributes, the rules of the stored Roles and
//!    bindings, kube-apiserver's denial messages), and `state::shared`, which holds it all with
//!    the store under its lock and the signal that ends every watch.
//! 6. `workload` — the optional background task that runs the workload controllers and a fake
//!    kubelet, as KWOK does: Deployments get ReplicaSets and rollout history, ReplicaSets, Jobs,
//!    StatefulSets and DaemonSets get Pods, Pods become Running and Ready (or Succeeded) after a
//!    delay, Services get Endpoints and EndpointSlices; what the fake kubelet says of a
//!    container's log (`container_log`, with `echo`); and the namespace controller's task
//!    (`namespaces`), which every emulator runs.
//! 7. `serve` — HTTP: `access` (the middleware that answers 401 and 403, and checks
//!    `blockOwnerDeletion` against the owner's finalizers); what a request can ask for on top of
//!    the store: `printers` (the built-in kinds' columns, `-o wide` included) and `table`
//!    (`Table` output), `watch` (resume from a resourceVersion, bookmarks, `sendInitialEvents`,
//!    in-stream `410 Expired`), `scale` (the `/scale` subresource); one resource request:
//!    `request` (the parsed request), `list` (lists with continue tokens, and watches), `delete`
//!    (with its `DeleteOptions`), `logs` (a Pod's `/log`) and `handlers` (get, list, watch,
//!    create, update, patch, delete, `/status`, a Namespace's `/finalize`, dispatched); `reviews` (the self-reviews of `kubectl auth can-i|whoami`);
//!    `routes` (URL paths laid out as kube-apiserver does, dispatched to discovery, OpenAPI or
//!    the handlers); `server` (the router with the middleware that keeps the request log, and
//!    the task serving it, over TLS when secure, with the workload task beside it).
//! 8. `kubeconfig` — the kubeconfig an emulator writes (its CA and admin token when secure).
//! 9. `emulator` — [`Emulator`] starts, restarts and stops the server; [`Error`] says why it
//!    could not start. This file is the facade: the crate's documentation and what is public.
//! 10. `fleet` — [`Fleet`]: several emulators in one process, one per named cluster, each
//!     with its own store, discovery, RBAC and kubeconfig (a hub and its member clusters).
//!
//! Tests only: `properties`, property tests of the rules that take arbitrary input (strategic
//! merge, server-side apply, label selectors) against simple models.
//!
//! # Deliberate simplifications
//! - A [`Fleet`] is several independent emulators on their own loopback ports, not one server
//!   hosting several clusters: they share the process and its async runtime (and so its CPU),
//!   where real clusters fail, slow down and restart independently of each other. Each member's
//!   faults and restarts are its own ([`Emulator::faults`], [`Emulator::restart`]); nothing makes
//!   members differ in version, latency or served kinds unless a test sets it up.
//! - By default no authentication, authorization or RBAC: plain HTTP, every request is allowed,
//!   the self-reviews answer allowed and `SelfSubjectReview` answers `system:admin`, so
//!   `kubectl auth can-i` and `auth whoami` work (`serve::reviews`). [`EmulatorConfig::secure`]
//!   turns on HTTPS (a CA generated at start, in the kubeconfig), bearer tokens (a static admin
//!   token in `system:masters`; ServiceAccount tokens from the TokenRequest API, opaque rather
//!   than JWTs, kept in memory: a restart keeps them, a new process does not; a wrong token gets
//!   401; no token is `system:anonymous`) and RBAC authorization (`state::auth`,
//!   `serve::access`): Roles, ClusterRoles and their bindings as stored, verbs, groups, resources
//!   and subresources, resourceNames, nonResourceURLs and `*`, with kube-apiserver's 403
//!   messages, and the `OwnerReferencesPermissionEnforcement` check (`blockOwnerDeletion` needs
//!   `update` on the owner's `finalizers`; its message names the missing permission where
//!   kube-apiserver's says `<nil>`). The bootstrap roles (`system:discovery`, `system:basic-user`,
//!   `system:public-info-viewer`) are built in, not stored objects; no aggregated ClusterRoles,
//!   no impersonation, no client certificates.
//! - No admission webhooks, no conversion webhooks; several served versions of a CRD share one
//!   stored object and only `apiVersion` is rewritten (no conversion).
//! - No controllers except the optional workload simulation ([`WorkloadSimulation`]): with it,
//!   Deployments roll out through ReplicaSets (the new one scaled up at once, old ones scaled
//!   down when it is available), ReplicaSets, Jobs, StatefulSets and DaemonSets own Pods on one
//!   fake node `weir-node` (a DaemonSet: one Pod, replaced by deleting the old one first when
//!   its template changes, with no ControllerRevisions), Pods whose `restartPolicy` is `Never`
//!   or `OnFailure` succeed (containers exit 0; none ever fails), and Services get Endpoints and
//!   one EndpointSlice; CronJobs, PersistentVolumeClaims, Ingresses and PodDisruptionBudgets
//!   are stored and served but nothing acts on them. A Pod turns Ready after `ready_after`, or
//!   up to 50 ms later together with the Pods due just before it: their owners, Services,
//!   Endpoints and EndpointSlices are then written once for all of them (a cluster's kubelets
//!   report on their own, and its controllers' resyncs batch what they find). No token controller: a secure emulator
//!   issues ServiceAccount tokens through the TokenRequest API only.
//! - Namespace deletion follows kube-apiserver and kube-controller-manager's namespace
//!   controller (`write::namespace`): a deleted Namespace is `Terminating`; a create in it gets
//!   the lifecycle admission's 403 (`NamespaceTerminating` cause); the controller deletes its
//!   Pods first and everything else once no Pod remains, writes its five deletion conditions
//!   (`NamespaceContentRemaining` and `NamespaceFinalizersRemaining` name what remains and the
//!   finalizers holding it), and once nothing remains drops the `kubernetes` finalizer through
//!   `/finalize`; then the Namespace is gone. `spec.finalizers` change only through `/finalize`.
//!   Differences: the controller runs as soon as anything in the namespace changes, where
//!   kube-controller-manager waits 5 s before its first pass and looks again every 15 s while
//!   finalizers hold content; the kinds after Pods are deleted in a fixed order (a cluster's is
//!   arbitrary); Pods go at once (no grace period); a Namespace removed through `/finalize` while
//!   content remains takes that content with it (a cluster leaves it in etcd, out of reach);
//!   `/finalize` does not check finalizer names.
//! - Pods' logs (`pods/log`, `workload::container_log`): nothing runs in a simulated container,
//!   so its log is what the simulated kubelet can honestly say. When the container's `command`
//!   (with its `args`) is a literal `echo` — run directly, or a `sh -c` script of `echo`
//!   commands whose variables the container's spec defines (`env` and `envFrom` values,
//!   ConfigMap and Secret keys, the downward API's Pod fields, `HOSTNAME`) — the log is that
//!   output, as the container would print it; anything else (another program, a pipe, a
//!   redirection, a glob, a substitution, a backslash, an unknown variable, no `command`) gets
//!   lifecycle lines marked `[weir-emulator]`: started from which image, exited with which code.
//!   Nothing in a container's command is ever run. Options as from a cluster: `container` (one
//!   must be named when a Pod has several), `follow` (open while the container runs, ended by
//!   its exit or its Pod's deletion), `previous` (always the kubelet's "previous terminated
//!   container ... not found": simulated containers never restart), `tailLines`, `limitBytes`,
//!   `sinceSeconds`, `sinceTime` and `timestamps` (an echo's lines all carry the container's
//!   start time); an unscheduled Pod's log is empty, a waiting container's answers the
//!   kubelet's 400. `stream` (stdout or stderr alone) is not served.
//! - Discovery (`kinds::discovery`) lists each served kind as kube-apiserver does (names, kinds,
//!   verbs, short names, categories, storage version hashes, `/status`, `/scale` and a secure
//!   emulator's `serviceaccounts/token`), in the per-group documents only: no aggregated
//!   discovery (`apidiscovery.k8s.io/v2`; clients fall back to the per-group documents), each
//!   group at its stable version only, and none of the subresources that need a running
//!   container (attach, exec, port-forward, proxy, ephemeral containers) nor eviction,
//!   binding or the reviews of another subject or token (only the
//!   self-reviews). `tests/emulator/discovery.rs` diffs it against a real server's documents
//!   and lists each remaining difference with its reason.
//! - `list` always reads the latest state (`resourceVersion`/`resourceVersionMatch` ignored);
//!   continue tokens page over the live set rather than a snapshot.
//! - Field selectors: custom resources accept only `metadata.name` and `metadata.namespace`
//!   (others answer 400, as from a real server; CRD `selectableFields` are not read); built-in
//!   kinds accept any plain field path where a real server accepts a per-kind list.
//! - A watch whose selector stops matching an object gets a synthetic DELETED, as from the
//!   watch cache.
//! - Built-in kinds are defaulted as kube-apiserver defaults them (Pod, Deployment, ReplicaSet,
//!   StatefulSet, DaemonSet, Job, CronJob and their pod templates, Service with cluster IP and
//!   node port allocation — the lowest free address or port, where a cluster picks at random —,
//!   Secret, Namespace, PersistentVolumeClaim, PriorityClass, RBAC subjects)
//!   and checked for unknown fields only: no other validation of built-in kinds (a Deployment
//!   without a selector is accepted). `metadata.generation` is set on every kind (a cluster sets
//!   it only where the kind's strategy does).
//! - Strategic merge knows merge keys by field name (containers/env/volumes by `name`, ports by
//!   `containerPort` or `port`, conditions by `type`) rather than from full type metadata.
//! - Server-side apply treats lists without a known merge key as atomic and does not read
//!   `x-kubernetes-list-type` from CRD schemas.
//! - JSON in and out, plus protobuf request bodies of every served built-in kind (what kubectl's
//!   generators send); protobuf responses are never produced, and protobuf for custom resources
//!   gets 415, as from a real server. No CBOR. A body is decoded before the store is locked; an
//!   apply configuration that is valid JSON is read as JSON (so a key given twice keeps its last
//!   value, where kube-apiserver's YAML decoder refuses it), anything else as YAML 1.2. `Table`
//!   output has Name, Age, a few columns per built-in kind and a CRD's
//!   `additionalPrinterColumns` (simple JSONPaths only).
//! - `/openapi/v3` serves the built-in kinds' full schemas (generated from k8s-openapi, so
//!   `kubectl explain` works) and each CRD's schema; its paths list only the basic verbs.
//!   `/openapi/v2` (what kubectl before 1.29 reads for `apply` and `explain`) is the same
//!   schemas rewritten for Swagger 2.0, JSON or gnostic protobuf by `Accept`: what 2.0 cannot say
//!   (`nullable`, `oneOf`, `anyOf`, `not`) is dropped. Neither version carries the
//!   `x-kubernetes-patch-strategy`/`-merge-key` extensions (k8s-openapi's schemas lack them),
//!   so kubectl's client-side apply computes its patches as if every list were atomic; the
//!   server's strategic merge still merges by the known keys.
//! - PriorityClasses (`scheduling.k8s.io/v1`) are stored and served, the two system classes
//!   (`system-cluster-critical`, `system-node-critical`) exist from the start, and
//!   `preemptionPolicy` is defaulted; nothing else about them is checked (the reserved
//!   `system-` prefix, the value range, one `globalDefault`) and no Pod's priority is resolved
//!   from them.
//! - Watch history is bounded (`watch_history` events); a watcher falling further behind than
//!   the broadcast buffer gets an in-stream 410 and must re-list, like after etcd compaction.
//! - A state file ([`EmulatorConfig::state_file`]) keeps the objects and the resourceVersion
//!   counter but no watch history: after [`Emulator::restart`] (or a start from the file) a
//!   watch resuming from an older resourceVersion gets an in-stream 410 and must re-list, as
//!   after a kube-apiserver restart. The file is written on shutdown, restart and
//!   [`Emulator::save`], not after every write: an emulator that is killed loses what it served
//!   since.
//!
//! # Example
//! Start the emulator, create a Deployment with the real `kubectl`, and watch
//! it with kube's `watcher` until the simulated rollout completes (its ReplicaSet's two Pods
//! Running and Ready).
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> anyhow::Result<()> {
//! use futures::{StreamExt, TryStreamExt};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kube::api::Api;
//! use kube::runtime::{WatchStreamExt, watcher};
//! use tokio::io::AsyncWriteExt;
//! use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};
//!
//! let config = EmulatorConfig {
//!     workloads: Some(WorkloadSimulation { ready_after: std::time::Duration::from_millis(50) }),
//!     ..EmulatorConfig::default()
//! };
//! let emulator = Emulator::start(config).await?;
//! let dir = tempfile::tempdir()?;
//! let kubeconfig = dir.path().join("kubeconfig");
//! emulator.write_kubeconfig(&kubeconfig)?;
//!
//! let mut kubectl = tokio::process::Command::new("kubectl")
//!     .arg("--kubeconfig").arg(&kubeconfig)
//!     .args(["apply", "-f", "-"])
//!     .stdin(std::process::Stdio::piped())
//!     .spawn()?;
//! let manifest = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
//!   "metadata": {"name": "web", "namespace": "default"},
//!   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
//!            "template": {"metadata": {"labels": {"app": "web"}},
//!                         "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}"#;
//! let mut stdin = kubectl.stdin.take().expect("stdin is piped");
//! stdin.write_all(manifest.as_bytes()).await?;
//! drop(stdin);
//! assert!(kubectl.wait().await?.success(), "kubectl apply failed");
//!
//! // Watch until the simulated rollout reports two available replicas.
//! let deployments: Api<Deployment> = Api::namespaced(emulator.client(), "default");
//! let mut stream = watcher(deployments, watcher::Config::default()).applied_objects().boxed();
//! while let Some(d) = stream.try_next().await? {
//!     if d.status.and_then(|s| s.available_replicas) == Some(2) {
//!         break;
//!     }
//! }
//! emulator.shutdown().await;
//! # Ok(())
//! # }
//! ```

// In reading order (see above): each layer imports only from the ones declared before it.
mod wire;
mod kinds;
mod store;
mod write;
mod state;
mod workload;
mod serve;
mod kubeconfig;
mod emulator;
mod fleet;

#[cfg(test)]
mod properties;

pub use emulator::{Emulator, Error};
pub use fleet::Fleet;
pub use kinds::discovery::KUBE_VERSION;
pub use state::config::{EmulatorConfig, RequestRecord, WorkloadSimulation};
pub use state::faults::{Fault, Faults, FaultsError, Rule, Verb};
pub use state::persist::StateError;
pub use state::request_log::RequestCursor;
pub use store::writes::StoredWrites;
pub use wire::protobuf::{
    Error as ProtobufError, Mismatch as ProtobufMismatch, encode as encode_protobuf,
};
