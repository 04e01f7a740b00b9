//! `weir dev`'s live view in a real terminal (tmux): a hand edit of a Deployment's replicas is
//! put back, and the screen's feed says so, naming the field.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::workspace;

/// One tmux server of its own (`-L`), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("tmux: {e} (apt-get install tmux)"));
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "view"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> bool {
    Command::new("/usr/bin/kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_live_view_shows_a_hand_edited_replicas_put_back_with_the_field_named() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(crate::built("blog.wasm"), plugins.join("blog.wasm")).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let command = format!(
        "WEIR_CACHE_DIR={cache} {weir} dev --plugins {plugins} --kubeconfig {kubeconfig} \
         --apply {examples} --ready-after-ms 100 2>{log}",
        cache = workspace().join("target/plugin-cache").display(),
        weir = env!("CARGO_BIN_EXE_weir"),
        plugins = plugins.display(),
        kubeconfig = kubeconfig.display(),
        examples = workspace().join("deploy/examples").display(),
        log = dir.path().join("stderr").display(),
    );
    let tmux = Tmux {
        socket: format!("weir-view-{}", std::process::id()),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "view",
        "-x",
        "160",
        "-y",
        "48",
        &command,
    ]);

    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(
                Instant::now() < deadline,
                "{what}; the screen:\n{}",
                tmux.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait("the Blog did not turn Ready", &|| {
        kubectl(
            &kubeconfig,
            &[
                "wait",
                "--for=condition=Ready",
                "blog/hello",
                "--timeout=1s",
            ],
        )
    });
    let screen = tmux.screen();
    for expected in [
        "reconciles/s",
        "hot loops",
        "Blog default/hello",
        "created Deployment default/hello",
    ] {
        assert!(screen.contains(expected), "{expected:?} not on\n{screen}");
    }

    assert!(kubectl(
        &kubeconfig,
        &[
            "patch",
            "deployment",
            "hello",
            "-p",
            r#"{"spec":{"replicas":5}}"#
        ]
    ));
    wait("no put-back line in the feed", &|| {
        tmux.screen()
            .contains("put back Deployment default/hello (spec.replicas) of Blog default/hello")
    });
    assert!(kubectl(
        &kubeconfig,
        &[
            "wait",
            "--for=jsonpath={.spec.replicas}=2",
            "deployment/hello",
            "--timeout=5s"
        ]
    ));
}
