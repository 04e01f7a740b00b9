//! `weir record` on `weir dev`'s emulator with 100 Blogs: the serving plugin passes what was
//! recorded and the v2 build, which adds one label, fails naming exactly that label; and a
//! reconcile that failed on the cluster, dumped with `--dump-failures`, fails the same way
//! under `weir test`.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::built;
use crate::dev::Dev;

const BLOGS: usize = 100;

fn weir(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .args(paths)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits until `check` holds, polling; fails with `what` after `wait`.
fn eventually(wait: Duration, what: &str, mut check: impl FnMut() -> Option<String>) {
    let deadline = Instant::now() + wait;
    loop {
        let Some(state) = check() else { return };
        assert!(Instant::now() < deadline, "{what}: {state}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn weir_record_of_100_blogs_passes_the_serving_plugin_fails_v2_on_its_label_and_a_dump_fails_the_same_way()
 {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let plugins = root.join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(built("blog.wasm"), plugins.join("blog.wasm")).unwrap();
    let dumps = root.join("dumps");
    let mut dev = Dev::spawn(
        dir,
        &[
            "--plain".into(),
            "--plugins".into(),
            plugins.clone().into(),
            "--dump-failures".into(),
            dumps.clone().into(),
        ],
        &[],
    );
    dev.expect_line(&["plugin blog", "serves Blog.weir.dev"]);

    // 100 Blogs, and one whose name cannot name a Service: the plugin fails on it.
    let mut manifests = String::new();
    for i in 0..BLOGS {
        writeln!(
            manifests,
            "---\napiVersion: weir.dev/v1alpha1\nkind: Blog\nmetadata: {{name: blog-{i:03}, namespace: default}}\nspec: {{title: Blog {i}, replicas: {}}}",
            i % 3
        )
        .unwrap();
    }
    manifests.push_str(
        "---\napiVersion: weir.dev/v1alpha1\nkind: Blog\nmetadata: {name: 1st-blog, namespace: default}\nspec: {title: First}\n",
    );
    let file = root.join("blogs.yaml");
    std::fs::write(&file, manifests).unwrap();
    eventually(Duration::from_secs(30), "the Blog CRD", || {
        let out = Command::new("/usr/bin/kubectl")
            .arg("--kubeconfig")
            .arg(&dev.kubeconfig)
            .arg("apply")
            .arg("-f")
            .arg(&file)
            .output()
            .unwrap();
        (!out.status.success()).then(|| text(&out))
    });
    let started = Instant::now();
    eventually(Duration::from_secs(120), "Blogs not all Ready", || {
        let ready = dev.kubectl(&[
            "get",
            "blogs",
            "-o",
            "jsonpath={range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
        ]);
        let n = ready.lines().filter(|l| *l == "True").count();
        (n < BLOGS).then(|| format!("{n} of {BLOGS} Ready"))
    });
    let dumped = dumps.join("blog-default_1st-blog.yaml");
    eventually(Duration::from_secs(30), "no dump", || {
        (!dumped.exists()).then(|| format!("{} missing", dumped.display()))
    });
    eprintln!(
        "{BLOGS} Blogs Ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Recorded: one fixture per Blog, the serving plugin's answers expected.
    let recorded = root.join("recorded");
    let out = weir(
        &["record", "--plugin"],
        &[
            &built("blog.wasm"),
            Path::new("--kubeconfig"),
            &dev.kubeconfig,
            &recorded,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "recorded {} parents into {} (1 expecting an error or a refusal)",
            BLOGS + 1,
            recorded.display()
        )),
        "{}",
        text(&out)
    );
    let one = std::fs::read_to_string(recorded.join("default_blog-007.yaml")).unwrap();
    assert!(
        one.contains("kind: Deployment") && !one.contains("managedFields"),
        "{one}"
    );

    let serving = weir(&["test"], &[&built("blog.wasm"), &recorded]);
    assert!(serving.status.success(), "{}", text(&serving));
    assert!(
        text(&serving).contains(&format!("blog: {} passed, 0 failed", BLOGS + 1)),
        "{}",
        text(&serving)
    );

    // v2 adds the label weir.dev/hot-swapped to every child (and the Deployment's pods).
    let v2 = weir(&["test"], &[&built("blog-v2.wasm"), &recorded]);
    let report = text(&v2);
    assert!(!v2.status.success(), "{report}");
    assert!(
        report.contains(&format!("blog: 1 passed, {BLOGS} failed")),
        "{report}"
    );
    let summary: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("would change"))
        .take_while(|l| !l.starts_with("blog:"))
        .collect();
    assert_eq!(
        summary.first().copied(),
        Some(&*format!(
            "would change {BLOGS} of {} parents, in 4 field(s):",
            BLOGS + 1
        )),
        "{report}"
    );
    for line in &summary[1..] {
        assert!(
            line.trim_start().starts_with(&format!("{BLOGS}  "))
                && line
                    .contains("labels[\"weir.dev/hot-swapped\"]   (e.g. default_blog-000.yaml: "),
            "a field other than the label: {line}\n{report}"
        );
    }
    let fields: Vec<&str> = summary[1..]
        .iter()
        .filter_map(|l| l.split("   (e.g.").next())
        .map(|l| l.trim_start_matches(|c: char| c == ' ' || c.is_ascii_digit()))
        .collect();
    assert_eq!(
        fields,
        [
            "ConfigMap metadata.labels[\"weir.dev/hot-swapped\"]",
            "Deployment metadata.labels[\"weir.dev/hot-swapped\"]",
            "Deployment spec.template.metadata.labels[\"weir.dev/hot-swapped\"]",
            "Service metadata.labels[\"weir.dev/hot-swapped\"]",
        ],
        "{report}"
    );

    // The dump: `weir test` shows the error the cluster showed in the Blog's condition.
    let condition = dev.kubectl(&[
        "get",
        "blog",
        "1st-blog",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Reconciled\")].message}",
    ]);
    assert!(condition.contains("cannot name a Service"), "{condition}");
    let replay = weir(&["test"], &[&built("blog.wasm"), &dumps]);
    let replayed = text(&replay);
    assert!(!replay.status.success(), "{replayed}");
    assert!(
        replayed.contains(&format!("reconcile failed: {condition}")),
        "the condition says {condition:?}; weir test:\n{replayed}"
    );
    dev.stop("-TERM");
}
