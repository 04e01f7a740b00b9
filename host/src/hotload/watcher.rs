//! The loader thread: wake on watch events or timers, scan, load, emit.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher as _};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tracing::{debug, info, warn};

use crate::chain::Chain;

use super::arbiter::KindKey;
use super::dir::{DirState, FileRefusal, Loaded, PluginEvent, Stamp};
use super::{Catalog, Config, Error, Events, HotloadMetrics, Loader, Result};

/// A running hot loader; dropping it stops the watcher and the loader thread.
pub struct HotLoader {
    // The thread stops when every sender of its wake channel is gone: the
    // watcher's callback holds one, this handle the other.
    _watcher: notify::RecommendedWatcher,
    _wake: mpsc::Sender<()>,
    catalog: Catalog,
}

impl HotLoader {
    /// Starts watching `config.dir`; the first scan loads what is already there.
    ///
    /// Events arrive on the returned receiver in the order they happened.
    pub fn start<L: Loader>(
        config: Config,
        loader: L,
        metrics: HotloadMetrics,
    ) -> Result<(Self, Events<L::Plugin>)> {
        if !config.dir.is_dir() {
            return Err(Error::NotADirectory(config.dir));
        }
        let (wake_tx, wake_rx) = mpsc::channel::<()>();
        let keep_awake = wake_tx.clone();
        let watch_err = |source| Error::Watch {
            dir: config.dir.clone(),
            source,
        };
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Err(err) = event {
                warn!(error = %err, "plugins directory watch error; the periodic scan covers it");
            }
            // A closed channel means the loader is stopping: nothing to wake.
            let _ = wake_tx.send(());
        })
        .map_err(watch_err)?;
        // Non-recursive: a ConfigMap swap renames `..data` inside DIR itself.
        watcher
            .watch(&config.dir, RecursiveMode::NonRecursive)
            .map_err(watch_err)?;
        super::signed::announce(&config.dir, config.verification.as_deref());
        let (events_tx, events_rx) = unbounded_channel();
        let catalog = Catalog::default();
        let run = Run {
            state: DirState::new(config.dir.clone(), config.timing, config.only.clone()),
            config,
            loader,
            events: events_tx,
            metrics,
            catalog: catalog.clone(),
        };
        std::thread::Builder::new()
            .name("weir-hotload".into())
            .spawn(move || run.run(&wake_rx))
            .map_err(Error::Thread)?;
        Ok((
            Self {
                _watcher: watcher,
                _wake: keep_awake,
                catalog,
            },
            events_rx,
        ))
    }

    /// The plugins served right now.
    pub fn catalog(&self) -> Catalog {
        self.catalog.clone()
    }
}

struct Run<L: Loader> {
    state: DirState<L::Plugin>,
    config: Config,
    loader: L,
    events: UnboundedSender<PluginEvent<L::Plugin>>,
    metrics: HotloadMetrics,
    catalog: Catalog,
}

impl<L: Loader> Run<L> {
    fn run(mut self, wake: &mpsc::Receiver<()>) {
        let mut wait = Duration::ZERO;
        loop {
            match wake.recv_timeout(wait) {
                Ok(()) => self.debounce(wake),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
            if self.events.is_closed() {
                debug!("plugin events receiver dropped; hot loader stops");
                return;
            }
            let freed = self.scan();
            let now = Instant::now();
            if self.state.next_due(now).is_none() {
                // Everything present has been loaded or refused: readiness may now count on it.
                self.catalog.mark_scanned();
            }
            wait = if freed {
                Duration::ZERO
            } else {
                self.state
                    .next_due(now)
                    .map_or(self.config.rescan_every, |d| {
                        d.min(self.config.rescan_every)
                    })
            };
        }
    }

    /// Waits until events stop for the debounce time (at most 1 s in all).
    fn debounce(&self, wake: &mpsc::Receiver<()>) {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && wake.recv_timeout(self.config.debounce).is_ok() {}
    }

    /// One pass; true when a kind was freed (files refused for it get another chance).
    fn scan(&mut self) -> bool {
        let observation = match self.state.observe(Instant::now()) {
            Ok(o) => o,
            Err(err) => {
                warn!(dir = %self.config.dir.display(), error = %err, "cannot read plugins directory");
                return false;
            }
        };
        let mut freed = false;
        for event in observation.events {
            freed |= matches!(event, PluginEvent::Removed { .. });
            self.emit(event);
        }
        for (file, stamp) in observation.ready {
            info!(file = %file.display(), "loading plugin");
            let started = Instant::now();
            self.catalog.set_loading(Some(file.clone()));
            let outcome = self.load(&file);
            self.catalog.set_loading(None);
            let took = started.elapsed();
            self.metrics.loaded_in(took.as_secs_f64());
            let still = Stamp::of(&file).ok();
            match &outcome {
                Ok(_) => {
                    info!(file = %file.display(), took_ms = took.as_millis(), "plugin file compiled and checked")
                }
                Err(err) => {
                    debug!(file = %file.display(), took_ms = took.as_millis(), error = %err, "plugin file did not load")
                }
            }
            for event in self
                .state
                .decide(&file, stamp, still, outcome, Instant::now())
            {
                freed |= matches!(event, PluginEvent::Removed { .. });
                self.emit(event);
            }
        }
        freed
    }

    /// Reads `file` once, holds those bytes to the verification policy, and loads exactly them.
    fn load(&self, file: &Path) -> std::result::Result<L::Plugin, FileRefusal> {
        let bytes = std::fs::read(file)
            .map_err(|e| FileRefusal::Invalid(format!("cannot read {}: {e}", file.display())))?;
        super::signed::check(self.config.verification.as_deref(), file, &bytes)?;
        self.loader
            .load(file, &bytes)
            .map_err(|e| FileRefusal::Invalid(Chain(&e).to_string()))
    }

    fn emit(&mut self, event: PluginEvent<L::Plugin>) {
        self.catalog.apply(&event);
        let served = self.catalog.len();
        match &event {
            PluginEvent::Added { file, plugin } => {
                self.metrics.changed("added", served);
                let info = plugin.info();
                info!(plugin = %info.name, version = %info.version, kind = %KindKey::of(info),
                    file = %name(file), sha256 = %plugin.sha256(), "plugin added");
            }
            PluginEvent::Replaced { file, old, new } => {
                self.metrics.changed("replaced", served);
                info!(plugin = %new.info().name, from = %old.info().version, to = %new.info().version,
                    kind = %KindKey::of(new.info()), file = %name(file), sha256 = %new.sha256(), "plugin replaced");
            }
            PluginEvent::Removed { file, plugin } => {
                self.metrics.changed("removed", served);
                info!(plugin = %plugin.info().name, kind = %KindKey::of(plugin.info()), file = %name(file),
                    "plugin removed; its controller stops and its children are left as they are");
            }
            PluginEvent::Refused { file, reason } => {
                self.metrics.refused(reason.label());
                match reason {
                    FileRefusal::Invalid(why) => warn!(file = %name(file), reason = "invalid",
                        "refused plugin {}: {why}; what served before keeps serving", name(file)),
                    FileRefusal::Conflict { kind, serving } => {
                        warn!(file = %name(file), reason = "conflict",
                        "refused plugin {}: kind {kind} is already served by {}", name(file), name(serving))
                    }
                    FileRefusal::Unverified { reason, message } => {
                        warn!(file = %name(file), reason,
                        "refused plugin {}: {message}; what served before keeps serving", name(file))
                    }
                }
            }
        }
        // A dropped receiver is noticed at the top of the loop.
        let _ = self.events.send(event);
    }
}

fn name(file: &Path) -> String {
    file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
