//! End-to-end tests: one binary, one module per scenario. Each runs on the embedded emulator,
//! or on the cluster `KUBECONFIG` names. Plugins come from `target/plugins` (`plugins/build.sh`).

// The hand-written components the `weir` crate's own tests use too (a `describe` that traps,
// another contract version).
use weir_test_support::guests;

mod blog_lifecycle;
mod blog_theme;
mod converged_writes_nothing;
mod deletion_runs_the_finalizer;
mod drift_is_reverted;
mod dumped_refusals_replay;
mod failing_plugin_backs_off;
mod faults_converge;
mod hostile;
mod hot_loading;
mod hot_loading_signed;
mod hot_loop_is_throttled;
mod informers_are_shared;
mod kills;
mod leader_election;
mod leader_failover;
mod leader_fence;
mod member_children;
mod member_clusters;
mod member_credentials;
mod member_related;
mod member_secrets;
mod member_unreached;
mod metacontroller_example;
mod metacontroller_finalize;
mod namespace_deletion_finalizes_each_blog;
mod no_takeover_in_the_race_window;
mod no_write_loses_a_race;
mod one_write_per_changed_child;
mod other_languages;
mod plugin_resource;
mod plugins_are_given_the_cached_json;
mod refused_answers_write_nothing;
mod related_in_another_namespace;
mod related_objects;
mod restart_converges;
mod rollout_canary;
mod rollout_restart;
mod rollout_shadow;
mod rollout_steered;
mod rollout_undo;
mod scope_widened;
mod shards;
mod shards_handover;
mod shards_server_side;
mod standby_writes_nothing;
mod tenant_plugins;
mod unwanted_children_are_pruned;
mod watch_recovers;
mod weir_run_binary;
