use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::*;

/// What the runnables did, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, line: impl Into<String>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line.into());
    }

    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn until(&self, line: &str) {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !self.lines().iter().any(|l| l == line) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {line:?} in {:?}", self.lines()));
    }
}

/// A runnable that logs its start, waits for its stop, takes a moment to finish, and logs that.
fn logging(
    log: &Log,
    name: &'static str,
) -> impl FnOnce(CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static {
    let log = log.clone();
    move |stop| {
        Box::pin(async move {
            log.push(format!("{name} started"));
            stop.cancelled().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            log.push(format!("{name} stopped"));
        })
    }
}

#[tokio::test]
async fn stages_stop_in_reverse_each_awaited_before_the_one_before_it() {
    let log = Log::default();
    let mut runnables = Runnables::default();
    // Added out of order on purpose: the stage decides.
    runnables.always(Stage::Beside, "beside", logging(&log, "beside"));
    runnables.always(Stage::Serving, "serving", logging(&log, "serving"));
    runnables.always(
        Stage::Controllers,
        "controllers",
        logging(&log, "controllers"),
    );
    let running = runnables.start();
    for name in ["serving", "controllers", "beside"] {
        log.until(&format!("{name} started")).await;
    }
    let stop = CancellationToken::new();
    stop.cancel();
    assert_eq!(running.run_until(stop).await, None, "stopped, not ended");
    let stopped: Vec<String> = log
        .lines()
        .into_iter()
        .filter(|l| l.ends_with("stopped"))
        .collect();
    assert_eq!(
        stopped,
        ["beside stopped", "controllers stopped", "serving stopped"]
    );
}

#[tokio::test]
async fn a_runnable_ending_on_its_own_stops_the_host() {
    let log = Log::default();
    let mut runnables = Runnables::default();
    runnables.always(Stage::Serving, "serving", logging(&log, "serving"));
    runnables.always(Stage::Beside, "failing", |_stop| async {});
    let stop = CancellationToken::new();
    tokio::time::timeout(
        Duration::from_secs(5),
        runnables.start().run_until(stop.clone()),
    )
    .await
    .unwrap_or_else(|_| panic!("the host kept running: {:?}", log.lines()));
    assert!(!stop.is_cancelled(), "nobody asked it to stop");
    assert!(log.lines().contains(&"serving stopped".to_owned()));
}

#[tokio::test]
async fn a_runnable_needing_leadership_runs_only_while_it_leads_a_fresh_term_each_time() {
    let log = Log::default();
    let leading = Fence::closed();
    let mut runnables = Runnables::default();
    let mut terms = 0;
    let term_log = log.clone();
    runnables.leading(Stage::Beside, "coordinator", leading.clone(), move |stop| {
        terms += 1;
        let (log, term) = (term_log.clone(), terms);
        async move {
            log.push(format!("term {term} started"));
            stop.cancelled().await;
            log.push(format!("term {term} stopped"));
        }
    });
    let running = runnables.start();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        log.lines().is_empty(),
        "a standby runs nothing: {:?}",
        log.lines()
    );
    let lead = || leading.open_until(SystemTime::now() + Duration::from_secs(3600));
    lead();
    log.until("term 1 started").await;
    leading.close();
    log.until("term 1 stopped").await;
    lead();
    log.until("term 2 started").await;
    let stop = CancellationToken::new();
    stop.cancel();
    running.run_until(stop).await;
    assert_eq!(
        log.lines(),
        [
            "term 1 started",
            "term 1 stopped",
            "term 2 started",
            "term 2 stopped"
        ]
    );
}
