//! A Plugin's `spec.candidate` held to the verification policy before any load: under
//! `enforce`, a candidate unsigned or signed by a key the policy does not name is refused, its
//! reason on the Plugin's `CandidateLoaded` condition, and never shadowed, canaried or promoted
//! while the signed v1 keeps serving every Blog; under `audit` the same candidate is shadowed and
//! its status says why it would have been refused; the same bytes signed by the policy's key are
//! accepted under `enforce` and promoted. [`Serving`] starts the enforcing host and holds those
//! checks, which `signed_candidate_bundle` runs on candidates signed by Sigstore bundles.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use kube::Api;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::task::JoinHandle;
use weir::cluster::{PluginResource, PluginStatus};
use weir::manager::Manager;
use weir::rollout::{Phase, PhaseStore, RolloutConfig};
use weir::trust::PrivateKey;
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, own_engine, plugin, wait_ready};
use weir_test_support::registry::LocalRegistry;

use super::signed::{key_file, policy_file, verified};
use super::through_the_host::{apply, condition, install_plugin_crd, loaded_digest, status_until};
use super::{weir_push, weir_push_with};
use crate::rollout_canary::{Versions, follow_versions};
use crate::rollout_shadow::labelled;

const BLOG: &str = "Blog.weir.dev";
const BLOGS: usize = 4;

/// The cluster-source host held to `policy`, rolling candidates out as `rollout` says.
async fn host(
    env: &TestEnv,
    store: &Path,
    policy: &str,
    rollout: RolloutConfig,
) -> Result<Manager> {
    env.run_args(RunSource::Cluster(store.into()))
        .flags(["--verification-policy", policy])
        .in_process(env)
        .config(|c| c.rollout = rollout)
        .engine(own_engine()?)
        .start()
        .await
}

/// Shadow until every Blog was compared, then promoted at once.
fn promoted_after_one_round() -> RolloutConfig {
    RolloutConfig {
        shadow_reconciles: BLOGS as u64,
        steps: vec![],
        min_phase_time: Duration::ZERO,
        ..RolloutConfig::default()
    }
}

/// Shadow for good.
fn shadow_only() -> RolloutConfig {
    RolloutConfig {
        shadow_reconciles: u64::MAX,
        min_phase_time: Duration::ZERO,
        ..RolloutConfig::default()
    }
}

/// `(status, reason, message)` of the Plugin's condition `type_`.
fn said(s: &PluginStatus, type_: &str) -> (String, String, String) {
    s.conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

/// The Plugin `blog` served by the signed v1, with `candidate`.
async fn with_candidate(
    plugins: &Api<PluginResource>,
    v1_ref: &str,
    v1: &str,
    candidate: Value,
) -> Result<()> {
    let spec = json!({"source": {"oci": v1_ref}, "digest": v1, "candidate": candidate});
    apply(plugins, "blog", spec).await
}

/// What the host shows of the rollout of Blog.
#[derive(Debug, PartialEq)]
struct Seen {
    /// Its phase, in process.
    phase: Option<Phase>,
    /// Its phase, as `/plugins` lists it.
    listed: Option<Phase>,
    /// Reconciles whose two versions' answers were compared, on `/metrics`.
    compared: u64,
    /// Why the candidate was refused, as `/plugins` lists it.
    refused: Option<String>,
}

async fn seen(host: &Manager) -> Result<Seen> {
    let addr = host.addr().map(|a| a.to_string()).unwrap_or_default();
    let row = weir::listing::fetch(&addr)
        .await?
        .into_iter()
        .find(|p| p.kind == BLOG)
        .ok_or_else(|| anyhow::anyhow!("/plugins lists no {BLOG}"))?;
    Ok(Seen {
        phase: host.rollouts().get(BLOG).map(|r| r.phase.clone()),
        listed: row.rollout.map(|r| r.phase),
        compared: host.metrics().compared_of("blog"),
        refused: row.candidate_refused,
    })
}

/// The digest `candidate` names.
fn digest_of(candidate: &Value) -> Result<String> {
    candidate["digest"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("the candidate {candidate} names no digest"))
}

/// The Plugin `blog` served by the signed v1, `BLOGS` Blogs ready and their pages' versions
/// followed: where a candidate is tried, in a test namespace of its own with its hosts' store.
pub(super) struct Serving {
    env: TestEnv,
    plugins: Api<PluginResource>,
    store: TempDir,
    v1_ref: String,
    v1: String,
    blogs: Api<DynamicObject>,
    phases: PhaseStore,
    versions: Versions,
    follower: JoinHandle<()>,
}

impl Serving {
    /// A test namespace with the Blog and Plugin CRDs, a host held to the `enforce` policy file
    /// on a fresh store (rolling out as [`promoted_after_one_round`] says), and under it the
    /// Plugin `blog` serving `v1` (pushed as `v1_ref`), verified, and the Blogs ready. Returns
    /// what serves and the enforcing host.
    pub(super) async fn enforcing(
        enforce: &str,
        v1_ref: &str,
        v1: &str,
    ) -> Result<(Serving, Manager)> {
        let env = TestEnv::start().await?;
        env.install_crd(&plugin("blog")?).await?;
        let plugins = install_plugin_crd(&env).await?;
        let store = tempfile::tempdir()?;
        let enforcing = host(&env, store.path(), enforce, promoted_after_one_round()).await?;
        let serving = Self::start(env, plugins, store, v1_ref, v1).await?;
        Ok((serving, enforcing))
    }

    /// Another host on this namespace and store, held to `policy`, rolling out as `rollout`.
    async fn host(&self, policy: &str, rollout: RolloutConfig) -> Result<Manager> {
        host(&self.env, self.store.path(), policy, rollout).await
    }

    /// Applies the Plugin `blog` with `v1` (pushed as `v1_ref`), waits until it serves verified
    /// under the host already running, and creates the Blogs.
    async fn start(
        env: TestEnv,
        plugins: Api<PluginResource>,
        store: TempDir,
        v1_ref: &str,
        v1: &str,
    ) -> Result<Serving> {
        apply(
            &plugins,
            "blog",
            json!({"source": {"oci": v1_ref}, "digest": v1}),
        )
        .await?;
        status_until(&plugins, "blog", "the signed v1 serves", |s| {
            loaded_digest(v1)(s) && verified(s).0 == "True"
        })
        .await?;
        let blogs = env.api(&kinds::blog());
        for i in 0..BLOGS {
            let name = format!("blog-{i}");
            env.create(&kinds::blog(), &name, json!({"title": name, "replicas": 1}))
                .await?;
        }
        for i in 0..BLOGS {
            wait_ready(&blogs, &format!("blog-{i}")).await?;
        }
        let (versions, follower) = follow_versions(&env, BLOGS).await?;
        let phases = PhaseStore::new(env.client.clone(), &env.namespace, "e2e");
        Ok(Serving {
            env,
            plugins,
            store,
            v1_ref: v1_ref.to_owned(),
            v1: v1.to_owned(),
            blogs,
            phases,
            versions,
            follower,
        })
    }

    /// Proposes `candidate` (the `case`) and checks, under `host`, that it is refused for
    /// `reason`, its message naming its digest and `why`; that v1 keeps serving, following an
    /// edit; and that the candidate was never called (no rollout, comparison, kept phase or
    /// child).
    pub(super) async fn refuses(
        &self,
        host: &Manager,
        case: &str,
        candidate: Value,
        reason: &str,
        why: &str,
    ) -> Result<()> {
        let (env, blogs) = (&self.env, &self.blogs);
        let v2 = digest_of(&candidate)?;
        with_candidate(&self.plugins, &self.v1_ref, &self.v1, candidate).await?;
        let status = status_until(
            &self.plugins,
            "blog",
            &format!("the {case} candidate is refused"),
            |s| condition(s, "CandidateLoaded") == ("False".into(), reason.into()),
        )
        .await?;
        let (_, _, message) = said(&status, "CandidateLoaded");
        assert!(
            message.contains(&v2) && message.contains(why) && message.contains("not shadowed"),
            "{case}: {message}"
        );
        assert!(
            loaded_digest(&self.v1)(&status) && condition(&status, "Ready").0 == "True",
            "{case}: v1 serves: {status:?}"
        );
        assert_eq!(
            said(&status, "CandidateVerified"),
            Default::default(),
            "{case}"
        );

        // v1 follows a spec edit, and every Blog's children are v1's. (The title as the page
        // shows it: letters and spaces, nothing HTML escapes.)
        let title: String = format!("edited while {case}")
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ')
            .collect();
        blogs
            .patch(
                "blog-0",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"title": title}})),
            )
            .await?;
        eventually(
            &format!("{case}: v1 renders the edit"),
            CONVERGE,
            || async {
                let page = env
                    .api(&kinds::config_map())
                    .get("blog-0-page")
                    .await
                    .ok()?;
                page.data["data"]["index.html"]
                    .as_str()
                    .is_some_and(|html| html.contains(&title))
                    .then_some(())
            },
        )
        .await?;
        wait_ready(blogs, "blog-0").await?;

        // Never called: no rollout, no comparison, no kept phase; `/plugins` says why.
        let seen = seen(host).await?;
        assert_eq!(
            (&seen.phase, &seen.listed, seen.compared),
            (&None, &None, 0),
            "{case}: the candidate was called"
        );
        assert!(
            seen.refused.as_deref().is_some_and(|r| r.contains(why)),
            "{case}: /plugins lists {seen:?}"
        );
        assert_eq!(
            self.phases.load("blog").await?,
            None,
            "{case}: a phase was kept"
        );
        assert_eq!(labelled(env, "weir.dev/hot-swapped").await, 0, "{case}");
        Ok(())
    }

    /// Stops following the pages' versions and checks that no child went to another version.
    pub(super) fn no_child_steered(&self) {
        self.follower.abort();
        let steered: Vec<_> = self
            .versions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(_, h)| h.iter().any(Option::is_some))
            .map(|(page, h)| format!("{page}: {h:?}"))
            .collect();
        assert!(steered.is_empty(), "children went to v2: {steered:?}");
    }

    /// Proposes `candidate` and checks, under `host` (rolling out as
    /// [`promoted_after_one_round`] says), that the policy's key `platform` verifies it, that
    /// it is shadowed over every Blog and promoted, and that every child is then v2's.
    pub(super) async fn promotes(&self, host: &Manager, candidate: Value) -> Result<()> {
        let env = &self.env;
        let v2 = digest_of(&candidate)?;
        with_candidate(&self.plugins, &self.v1_ref, &self.v1, candidate).await?;
        let status = status_until(
            &self.plugins,
            "blog",
            "the signed candidate is accepted",
            |s| {
                condition(s, "CandidateLoaded").0 == "True"
                    && said(s, "CandidateVerified").0 == "True"
            },
        )
        .await?;
        let (_, _, message) = said(&status, "CandidateVerified");
        assert!(
            message.contains(&v2) && message.contains("platform"),
            "{message}"
        );
        eventually("every child is v2's", CONVERGE, || async {
            (labelled(env, "weir.dev/hot-swapped=v2").await == 3 * BLOGS).then_some(())
        })
        .await?;
        let seen = seen(host).await?;
        assert_eq!(
            (&seen.phase, &seen.listed, &seen.refused),
            (&Some(Phase::Promoted), &Some(Phase::Promoted), &None),
            "{seen:?}"
        );
        assert!(seen.compared >= BLOGS as u64, "{seen:?}");
        let kept = self.phases.load("blog").await?.map(|k| k.phase);
        assert_eq!(kept, Some(Phase::Promoted));
        Ok(())
    }
}

#[tokio::test]
async fn a_candidate_that_does_not_verify_is_never_shadowed_canaried_or_promoted_and_a_signed_one_rolls_out()
-> Result<()> {
    let registry = LocalRegistry::start()?;
    let dir = tempfile::tempdir()?;
    let (platform, stranger) = (
        PrivateKey::from_bytes(&[21; 32])?,
        PrivateKey::from_bytes(&[22; 32])?,
    );
    let platform_key = key_file(dir.path(), "platform", &platform)?;
    let v1_ref = registry.reference("weir/blog", "1.0");
    let v1 = weir_push_with("blog.wasm", &v1_ref, &["--sign", &platform_key]);
    // The same v2 bytes in three repositories: one digest, so only the signature beside it
    // decides.
    let v2 = weir_push("blog-v2.wasm", &registry.reference("weir/unsigned", "2.0"));
    let stranger_key = key_file(dir.path(), "stranger", &stranger)?;
    let by_stranger = registry.reference("weir/stranger", "2.0");
    assert_eq!(
        weir_push_with("blog-v2.wasm", &by_stranger, &["--sign", &stranger_key]),
        v2
    );
    let signed = registry.reference("weir/blog", "2.0");
    assert_eq!(
        weir_push_with("blog-v2.wasm", &signed, &["--sign", &platform_key]),
        v2
    );

    let enforce = policy_file(dir.path(), "enforce", &platform)?;
    let (serving, enforcing) = Serving::enforcing(&enforce, &v1_ref, &v1).await?;

    let refusals = [
        ("unsigned", "weir/unsigned", "Unsigned", "has no signature"),
        (
            "signed by a stranger",
            "weir/stranger",
            "SignatureUntrusted",
            "does not meet the policy",
        ),
    ];
    for (case, repository, reason, why) in refusals {
        let candidate = json!({"oci": registry.reference(repository, "2.0"), "digest": v2});
        serving
            .refuses(&enforcing, case, candidate, reason, why)
            .await?;
    }
    enforcing.shutdown().await;
    serving.no_child_steered();

    // Under audit, the stranger's candidate is shadowed, and the status says why it would not
    // have been.
    let audit = policy_file(dir.path(), "audit", &platform)?;
    let auditing = serving.host(&audit, shadow_only()).await?;
    let status = status_until(
        &serving.plugins,
        "blog",
        "audit rolls the candidate out",
        |s| condition(s, "CandidateLoaded").0 == "True",
    )
    .await?;
    let (is, reason, message) = said(&status, "CandidateVerified");
    assert_eq!(
        (is.as_str(), reason.as_str()),
        ("False", "SignatureUntrusted")
    );
    assert!(message.contains("audit"), "{message}");
    eventually("audit shadows the candidate", CONVERGE, || async {
        let seen = seen(&auditing).await.ok()?;
        let shadowed = seen.phase == Some(Phase::Shadow) && seen.listed == seen.phase;
        (shadowed && seen.compared >= BLOGS as u64).then_some(())
    })
    .await?;
    assert_eq!(labelled(&serving.env, "weir.dev/hot-swapped").await, 0);
    auditing.shutdown().await;

    // Under enforce again, the same bytes signed by the policy's key: verified, shadowed (where
    // audit left the phase), then promoted, and every child is v2's.
    let enforcing = serving.host(&enforce, promoted_after_one_round()).await?;
    serving.promotes(&enforcing, json!({"digest": v2})).await?;
    enforcing.shutdown().await;
    Ok(())
}
