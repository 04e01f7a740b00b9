use std::time::Duration;

use clap::{Args, Command};

use super::RunArgs;

fn help() -> String {
    RunArgs::augment_args(Command::new("run"))
        .render_long_help()
        .to_string()
}

#[test]
fn the_help_describes_the_candidates_directory_and_every_ops_endpoint() {
    let help = help();
    assert!(help.contains("`DIR/candidates/NAME.wasm`"), "{help}");
    for endpoint in ["/metrics", "/healthz", "/readyz", "/plugins"] {
        assert!(
            help.contains(&format!("`{endpoint}`")),
            "{endpoint}: {help}"
        );
    }
    assert!(help.contains("--rollout-phase-secs"), "{help}");
}

#[test]
fn the_rollout_flags_become_the_hosts_rollout_configuration() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let cli = Cli::parse_from([
        "run",
        "--plugins",
        "p",
        "--rollout-steps",
        "5,25,75",
        "--rollout-phase-secs",
        "30",
    ]);
    let rollout = cli.run.host.manager_config().map(|c| c.rollout);
    let rollout = rollout.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rollout.steps, [5, 25, 75]);
    assert_eq!(rollout.min_phase_time, std::time::Duration::from_secs(30));
    assert_eq!(rollout.shadow_reconciles, 100);
}

#[test]
fn the_lease_durations_set_both_leases_and_their_renewals() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let config = |extra: &[&str]| {
        let args = ["run", "--plugins", "p", "--shard", "--identity", "w-0"];
        Cli::try_parse_from(args.iter().chain(extra))
            .map_err(|e| e.to_string())
            .and_then(|cli| cli.run.host.manager_config().map_err(|e| e.to_string()))
    };
    let defaults = config(&[]).unwrap_or_else(|e| panic!("{e}"));
    let (leader, shard) = (defaults.leader.as_ref(), defaults.shard.as_ref());
    assert_eq!(
        leader.map(|l| (l.duration_secs, l.grace_secs)),
        Some((15, 5))
    );
    assert_eq!(
        shard.map(|s| (s.duration_secs, s.grace_secs)),
        Some((15, 5))
    );
    assert_eq!(shard.map(|s| s.assign_every), Some(Duration::from_secs(1)));

    let short = config(&[
        "--shard-lease-duration",
        "2s",
        "--leader-elect-lease-duration",
        "3",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let (leader, shard) = (short.leader.as_ref(), short.shard.as_ref());
    assert_eq!(
        leader.map(|l| (l.duration_secs, l.grace_secs)),
        Some((3, 1))
    );
    assert_eq!(shard.map(|s| (s.duration_secs, s.grace_secs)), Some((2, 1)));
    assert_eq!(
        shard.map(|s| s.assign_every),
        Some(Duration::from_millis(250))
    );

    for bad in ["1", "0s", "2m", "x"] {
        let refused = config(&["--shard-lease-duration", bad]).err();
        assert!(
            refused
                .as_deref()
                .is_some_and(|e| e.contains("--shard-lease-duration")),
            "{bad}: {refused:?}"
        );
    }
    let help = help();
    for flag in ["--shard-lease-duration", "--leader-elect-lease-duration"] {
        assert!(help.contains(flag), "{help}");
    }
}
