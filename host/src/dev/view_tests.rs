use std::time::UNIX_EPOCH;

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::dev::model::*;
use crate::manager::Write as Wrote;
use crate::reconcile::error::ResultLabel;

fn parent(ready: &str, children: &[&str]) -> ParentRow {
    ParentRow {
        ready: ready.into(),
        reconciled: String::new(),
        children: children.iter().map(|c| (*c).to_owned()).collect(),
    }
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn put_back() -> Activity {
    Activity::Wrote {
        plugin: "blog@0.1.0".into(),
        parent: "Blog default/hello".into(),
        child: "Deployment default/hello".into(),
        write: Wrote::PutBack,
        field: Some("spec.replicas".into()),
    }
}

fn printed(p: &mut Printed, model: &Model) -> String {
    let mut out = Vec::new();
    p.print(&mut out, model).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn plain_output_prints_new_feed_lines_once_and_only_the_lines_that_changed() {
    let mut model = Model::default();
    model
        .parents
        .insert("Blog d/a".into(), parent("Ready=False", &[]));
    model
        .parents
        .insert("Blog d/b".into(), parent("Ready=True", &[]));
    let mut p = Printed::default();
    printed(&mut p, &model);

    model
        .parents
        .insert("Blog d/a".into(), parent("Ready=True", &["ConfigMap/a"]));
    model.take(&put_back(), at(3600 + 61));
    assert_eq!(
        printed(&mut p, &model),
        "put back Deployment default/hello (spec.replicas) of Blog default/hello\n\
         Blog d/a: Ready=True, 1 children [ConfigMap/a]\n"
    );
    assert_eq!(printed(&mut p, &model), "", "nothing changed");
    model.parents.remove("Blog d/a");
    assert_eq!(printed(&mut p, &model), "Blog d/a: deleted\n");
}

#[test]
fn a_reconcile_is_remembered_per_parent_and_a_failure_keeps_its_reason() {
    let mut model = Model::default();
    let reconciled = |outcome| Activity::Reconciled {
        plugin: "blog@0.1.0".into(),
        parent: "Blog default/hello".into(),
        outcome,
    };
    model.take(&reconciled(ResultLabel::Success), at(10));
    assert_eq!(
        model.last["Blog default/hello"],
        ("00:00:10".into(), "success".into())
    );
    assert!(model.feed.is_empty(), "a reconcile alone is not news");
    model.take(
        &Activity::Failed {
            plugin: "blog@0.1.0".into(),
            parent: "Blog default/hello".into(),
            outcome: ResultLabel::Refused,
            reason: "Refused",
            message: "child Secret/x: kind not declared".into(),
        },
        at(11),
    );
    model.take(&reconciled(ResultLabel::Refused), at(11));
    assert_eq!(
        model.last["Blog default/hello"],
        ("00:00:11".into(), "refused (Refused)".into())
    );
    assert_eq!(
        model.feed.back().map(String::as_str),
        Some(
            "00:00:11 refused blog@0.1.0 for Blog default/hello: child Secret/x: kind not declared"
        )
    );
}

#[test]
fn the_screen_shows_plugins_with_their_counters_parents_and_the_feed() {
    let mut model = Model::default();
    model.plugins.insert(
        "Blog.weir.dev".into(),
        PluginRow {
            name: "blog".into(),
            version: "0.1.0".into(),
            kind: "Blog.weir.dev".into(),
            sha: "0123456789ab".into(),
            file: "plugins/blog.wasm".into(),
            rate: 2.5,
            errors: 1,
            refused: 0,
            hot_loops: 3,
        },
    );
    model.parents.insert(
        "Blog default/hello".into(),
        parent("Ready=True (Available)", &["ConfigMap/hello-page"]),
    );
    model.last.insert(
        "Blog default/hello".into(),
        ("10:00:01".into(), "success".into()),
    );
    for i in 0..40 {
        model.note(&format!("old line {i:02}"), at(i));
    }
    model.take(&put_back(), at(36_000 + 2));
    model.loading = Some("plugins/blog-v2.wasm".into());

    let mut terminal = Terminal::new(TestBackend::new(140, 30)).unwrap();
    terminal
        .draw(|f| super::super::screen::render(f, &model, "kubectl --kubeconfig k"))
        .unwrap();
    let screen = terminal.backend().to_string();
    for expected in [
        "kubectl --kubeconfig k",
        "compiling plugins/blog-v2.wasm",
        "reconciles/s",
        "hot loops",
        "2.5",
        "0123456789ab",
        "Blog default/hello",
        "Ready=True (Available)",
        "1 [ConfigMap/hello-page]",
        "10:00:01 success",
        "10:00:02 put back Deployment default/hello (spec.replicas) of Blog default/hello",
        "old line 39",
    ] {
        assert!(screen.contains(expected), "{expected:?} not on\n{screen}");
    }
    assert!(
        !screen.contains("old line 00"),
        "the feed shows the newest lines that fit:\n{screen}"
    );
}

#[test]
fn plain_output_prints_each_cluster_when_it_is_engaged_and_when_it_is_released() {
    let member = crate::clusters::ClusterRow {
        name: "member-1".into(),
        server: "http://127.0.0.1:4001/".into(),
        kinds: 1,
        objects: 2,
        bytes: 900,
    };
    let mut model = Model::default();
    model
        .clusters
        .insert("member-1".into(), cluster_line(&member));
    let mut p = Printed::default();
    let first = printed(&mut p, &model);
    assert!(
        first.contains(
            "cluster member-1 engaged at http://127.0.0.1:4001/: 1 kinds watched, 2 objects cached"
        ),
        "{first}"
    );
    assert_eq!(
        printed(&mut p, &model),
        "",
        "an unchanged cluster is not printed again"
    );
    model.clusters.clear();
    assert_eq!(printed(&mut p, &model), "cluster member-1 released\n");
}
