//! `weir dev --watch PROJECT`: on each save, rebuild the plugin, run its fixtures, and serve it only if they pass.
//!
//! PROJECT is a plugin project as `weir new` makes it: a `build.sh` that leaves `NAME.wasm` in
//! PROJECT, and a `fixtures/` directory. Its sources are watched recursively; `target/`,
//! `node_modules/`, `__pycache__/`, hidden directories (`.venv`, `.git`, `.weir`), lock files and
//! built `*.wasm` files are not sources. A burst of saves makes one build once the project has
//! been quiet for [`QUIET`].
//!
//! `build.sh` runs with `WEIR_DEV_BUILD=1` in its environment: a build tool that can make a
//! faster development build does (the Python and JavaScript SDKs write the plugin's code into a
//! runtime component they made once, instead of running componentize-py or componentize-js on
//! every save; see `guest-sdk/python/weir_reconciler/dev.py` and `guest-sdk/js/src/dev.js`). Such
//! a build is a component like any other, loaded under the same sandbox, limits and admission.
//!
//! At start, a component newer than every source (the last build, e.g. by `build.sh` before
//! `weir dev`) is checked and served at once, and then built again as a save would be, so that a
//! development build is prepared before the first save; otherwise the first build runs. Then the
//! feed says [`READY`].
//!
//! A build that passes every fixture (the same run as `weir test`, in this process) is copied
//! into `PROJECT/.weir/plugins/`, the directory the host's own directory source serves: the
//! hot loader swaps it in as it would any new file there; the component is compiled once, for the
//! fixtures, and the host's load of the copy reuses that compile (the engine keeps its last). The
//! engine of `weir dev --watch` compiles with wasmtime's baseline compiler (Winch), which takes a
//! fraction of Cranelift's time on a 12-20 MB Python or JavaScript component; the same fixtures
//! must pass under `weir test`'s optimizing compiler (`guest-sdk/scaffold-test.sh` checks both).
//! A failed build, a component that does
//! not load, or a failing fixture is shown (the view's feed, or plain lines) and nothing is
//! copied: the running version keeps serving.

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::answer::ValidationPolicy;
use crate::chain::Chain;
use crate::offline;
use crate::plugin::{Engine, Limits};

/// Quiet time after the last save before a build starts.
pub const QUIET: Duration = Duration::from_millis(150);
/// Said once the start's builds are done: from then on each save is one build.
pub const READY: &str = "ready: each save builds, runs the fixtures and serves what passes";
/// Lines of a failed build's output shown.
const BUILD_TAIL: usize = 12;

/// Why a project cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The directory lacks what a plugin project has.
    #[error("{} is not a plugin project: {missing} is missing (make one with `weir new`)", dir.display())]
    NotAProject {
        /// The directory.
        dir: PathBuf,
        /// `build.sh` or `fixtures/`.
        missing: &'static str,
    },
    /// The directory the components are served from could not be prepared.
    #[error("cannot prepare {}", path.display())]
    Served {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// What a new build must pass before it is served.
pub(crate) struct Checks {
    /// The host's engine (its compile cache makes the host's own load of the same bytes cheap).
    pub engine: Engine,
    /// Limits of each fixture's call.
    pub limits: Limits,
    /// The host's answer validation, so a fixture fails where the host would refuse.
    pub validation: ValidationPolicy,
}

/// A watched plugin project.
#[derive(Debug)]
pub(crate) struct Project {
    dir: PathBuf,
    served: PathBuf,
}

impl Project {
    /// Checks that `dir` is a plugin project and empties the directory its components are
    /// served from (nothing is served before the first build passes).
    pub(crate) fn open(dir: &Path) -> Result<Project, WatchError> {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        for (missing, ok) in [
            ("build.sh", dir.join("build.sh").is_file()),
            ("fixtures/", dir.join("fixtures").is_dir()),
        ] {
            if !ok {
                return Err(WatchError::NotAProject { dir, missing });
            }
        }
        let served = dir.join(".weir/plugins");
        let err = |source| WatchError::Served {
            path: served.clone(),
            source,
        };
        if served.exists() {
            std::fs::remove_dir_all(&served).map_err(err)?;
        }
        std::fs::create_dir_all(&served).map_err(err)?;
        Ok(Project { dir, served })
    }

    /// The project directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where passing builds are copied, for the host's directory source.
    pub(crate) fn served_dir(&self) -> &Path {
        &self.served
    }

    /// Whether a change of `path` is a change of the project's sources.
    pub(crate) fn is_source(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(&self.dir) else {
            return false;
        };
        let ignored_dir = rel.components().any(|c| match c {
            Component::Normal(name) => {
                let name = name.to_string_lossy();
                name.starts_with('.') || matches!(&*name, "target" | "node_modules" | "__pycache__")
            }
            _ => false,
        });
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ignored_file = name.ends_with(".wasm")
            || name.ends_with(".lock")
            || name.ends_with('~')
            || name.ends_with(".swp")
            || name.ends_with(".pyc")
            || name == "package-lock.json";
        !rel.as_os_str().is_empty() && !ignored_dir && !ignored_file
    }

    /// Builds once, then again after every burst of saves; runs until aborted.
    pub(crate) async fn run(self, checks: Checks, notes: UnboundedSender<String>) {
        let (tx, mut changes) = unbounded_channel::<PathBuf>();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
            ) {
                for path in event.paths {
                    // A closed channel means the watch is stopping.
                    let _ = tx.send(path);
                }
            }
        });
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                let _ = notes.send(format!("watch: cannot watch files: {}", Chain(&e)));
                return;
            }
        };
        if let Err(e) = watcher.watch(&self.dir, RecursiveMode::Recursive) {
            let _ = notes.send(format!(
                "watch: cannot watch {}: {}",
                self.dir.display(),
                Chain(&e)
            ));
            return;
        }
        let up_to_date = self.up_to_date().is_some();
        let mut served_sha = self
            .cycle("start", !up_to_date, &checks, &notes, None)
            .await;
        if up_to_date {
            // What was built before serves at once; a build now, as on a save, lets a build.sh
            // that makes development builds (WEIR_DEV_BUILD) prepare them before the first save.
            served_sha = self
                .cycle(
                    "start: the development build",
                    true,
                    &checks,
                    &notes,
                    served_sha,
                )
                .await;
        }
        let _ = notes.send(format!("watch: {READY}"));
        loop {
            // The next save after the build (saves during it count: their events are queued).
            let first = loop {
                match changes.recv().await {
                    Some(path) if self.is_source(&path) => break path,
                    Some(_) => {}
                    None => return,
                }
            };
            loop {
                match tokio::time::timeout(QUIET, changes.recv()).await {
                    Ok(Some(_)) => {}
                    Ok(None) => return,
                    Err(_quiet) => break,
                }
            }
            let reason = first
                .strip_prefix(&self.dir)
                .unwrap_or(&first)
                .display()
                .to_string();
            served_sha = self.cycle(&reason, true, &checks, &notes, served_sha).await;
        }
    }

    /// The built component, if it is newer than every source file (nothing to rebuild).
    fn up_to_date(&self) -> Option<PathBuf> {
        let wasm = built(&self.dir)?;
        let built_at = std::fs::metadata(&wasm).ok()?.modified().ok()?;
        let mut dirs = vec![self.dir.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).ok()?.filter_map(Result::ok) {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    return None;
                };
                if !self.is_source(&path) {
                    continue;
                }
                if kind.is_dir() {
                    dirs.push(path);
                } else if entry.metadata().ok()?.modified().ok()? > built_at {
                    return None;
                }
            }
        }
        Some(wasm)
    }

    /// One build (unless `build` is false: the last one is up to date), check and copy;
    /// returns the sha256 of what is served now.
    async fn cycle(
        &self,
        reason: &str,
        build: bool,
        checks: &Checks,
        notes: &UnboundedSender<String>,
        served_sha: Option<String>,
    ) -> Option<String> {
        let say = |line: String| {
            let _ = notes.send(line);
        };
        let started = Instant::now();
        if build {
            say(format!("watch: {reason}: building"));
            if !self.build(&say).await {
                return served_sha;
            }
        } else {
            say(format!(
                "watch: {reason}: the built component is newer than every source; not rebuilding"
            ));
        }
        let Some(wasm) = built(&self.dir) else {
            say("watch: build.sh left no *.wasm in the project".into());
            return served_sha;
        };
        let name = wasm
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if build {
            say(format!(
                "watch: built {name} in {:.1} s; running fixtures",
                started.elapsed().as_secs_f64()
            ));
        } else {
            say(format!("watch: running fixtures on {name}"));
        }
        let (engine, limits, validation) = (
            checks.engine.clone(),
            checks.limits,
            checks.validation.clone(),
        );
        let (file, fixtures_dir) = (wasm.clone(), self.dir.join("fixtures"));
        let built_after = started.elapsed();
        let checked = tokio::task::spawn_blocking(move || {
            let compiling = Instant::now();
            let plugin = engine
                .load_file(&file, limits)
                .map_err(|e| format!("{name} does not load: {}", Chain(&e)))?;
            let compiled_in = compiling.elapsed();
            let summary = offline::run_dir_with(&plugin, &fixtures_dir, &validation)
                .map_err(|e| Chain(&e).to_string())?;
            tracing::info!(
                build_s = built_after.as_secs_f64(),
                compile_s = compiled_in.as_secs_f64(),
                fixtures_s = (compiling.elapsed() - compiled_in).as_secs_f64(),
                "watch: a new build checked"
            );
            Ok::<_, String>((plugin.sha256().to_owned(), summary))
        })
        .await;
        let (sha, summary) = match checked {
            Ok(Ok(done)) => done,
            Ok(Err(why)) => {
                say(format!("watch: {why}; not swapped"));
                return served_sha;
            }
            Err(e) => {
                say(format!("watch: the fixture run failed: {e}; not swapped"));
                return served_sha;
            }
        };
        if summary.failed() > 0 {
            say(format!(
                "watch: fixtures failed ({} passed, {} failed): not swapped, the running version keeps serving",
                summary.passed(),
                summary.failed()
            ));
            let mut report = Vec::new();
            // Writing into a Vec cannot fail.
            let _ = summary.write_report(&mut report);
            for line in String::from_utf8_lossy(&report)
                .lines()
                .filter(|l| !l.starts_with("ok "))
            {
                say(format!("watch:   {line}"));
            }
            return served_sha;
        }
        if served_sha.as_deref() == Some(sha.as_str()) {
            say(format!(
                "watch: fixtures pass ({}); the component did not change",
                summary.passed()
            ));
            return served_sha;
        }
        match self.serve(&wasm) {
            Ok(()) => {
                // At start nothing was saved: the time since a save means nothing then.
                let since_save = if reason.starts_with("start") {
                    String::new()
                } else {
                    format!(" ({:.1} s after the save)", started.elapsed().as_secs_f64())
                };
                say(format!(
                    "watch: fixtures pass ({}); serving the new build{since_save}",
                    summary.passed(),
                ));
                Some(sha)
            }
            Err(e) => {
                say(format!("watch: cannot copy {}: {e}", wasm.display()));
                served_sha
            }
        }
    }

    /// Runs `build.sh`; says why when it fails.
    async fn build(&self, say: &impl Fn(String)) -> bool {
        let output = tokio::process::Command::new("bash")
            .arg("build.sh")
            .env("WEIR_DEV_BUILD", "1")
            .current_dir(&self.dir)
            .stdin(std::process::Stdio::null())
            .output()
            .await;
        let output = match output {
            Ok(o) => o,
            Err(e) => {
                say(format!("watch: cannot run build.sh: {e}"));
                return false;
            }
        };
        if !output.status.success() {
            say(format!(
                "watch: build failed ({}); still serving the last good version",
                output.status
            ));
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            let lines: Vec<&str> = text.lines().collect();
            for line in &lines[lines.len().saturating_sub(BUILD_TAIL)..] {
                say(format!("watch:   | {line}"));
            }
            return false;
        }
        true
    }

    /// Copies `wasm` into the served directory in one rename, so the hot loader never sees half a
    /// file. The copy keeps the build's modification time: the file is complete when it appears,
    /// so the loader, seeing it already older than its settle time, loads it without waiting.
    fn serve(&self, wasm: &Path) -> std::io::Result<()> {
        let name = wasm.file_name().unwrap_or_default();
        let partial = self
            .served
            .join(format!(".{}.partial", name.to_string_lossy()));
        std::fs::copy(wasm, &partial)?;
        let built_at = std::fs::metadata(wasm)?.modified()?;
        std::fs::File::options()
            .write(true)
            .open(&partial)?
            .set_modified(built_at)?;
        std::fs::rename(&partial, self.served.join(name))
    }
}

/// The `*.wasm` the build left in `dir`: the newest (a build that changed nothing may not touch it).
fn built(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<(SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    found.sort();
    found.pop().map(|(_, newest)| newest)
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
