//! Pods' logs (`pods/log`): a literal echo's output, else the simulated kubelet's lifecycle
//! lines, with the options and the errors of a real API server; read through kube and kubectl.

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, LogParams, PostParams};
use serde_json::json;

use crate::kubectl_bin::Kubectl;
use crate::workload_controllers::simulated;
use crate::{api_error, emulator, eventually};

fn pod(name: &str, containers: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": containers},
    }))
    .unwrap()
}

async fn running(pods: &Api<Pod>, name: &str) {
    eventually("the Pod runs", || async {
        let p = pods.get(name).await.unwrap();
        (p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
}

const JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: greet}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: greet
        image: busybox
        command: ["sh", "-c", "echo \"hello from $(POD_NAME)\"; echo greeting $GREETING"]
        env:
        - {name: GREETING, value: "the  world"}
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
"#;

async fn a_jobs_pods_logs_are_read_back_with_kubectl(kubectl: &std::path::Path) {
    let em = simulated(50).await;
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&["apply", "-f", &k.file("job.yaml", JOB)]).await;
    k.ok(&[
        "wait",
        "--for=condition=complete",
        "job/greet",
        "--timeout=30s",
    ])
    .await;
    let pod = k
        .ok(&[
            "get",
            "pods",
            "-l",
            "job-name=greet",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .await;
    assert!(pod.starts_with("greet-"), "{pod}");

    let logs = k.ok(&["logs", "job/greet"]).await;
    assert_eq!(logs, format!("hello from {pod}\ngreeting the world\n"));
    assert_eq!(
        k.ok(&["logs", &pod, "--tail=1"]).await,
        "greeting the world\n"
    );
    let stamped = k.ok(&["logs", &pod, "--timestamps"]).await;
    for line in stamped.lines() {
        let (at, _) = line.split_once(' ').unwrap();
        assert!(
            at.len() == "2026-01-01T00:00:00.000000000Z".len() && at.ends_with('Z'),
            "{line}"
        );
    }
    let previous = k.run(&["logs", &pod, "--previous"]).await;
    assert!(!previous.status.success());
    let stderr = String::from_utf8_lossy(&previous.stderr);
    assert!(
        stderr.contains(&format!(
            "previous terminated container \"greet\" in pod \"{pod}\" not found"
        )),
        "{stderr}"
    );
}

async fn a_container_that_is_not_a_literal_echo_logs_its_lifecycle_lines(
    kubectl: &std::path::Path,
) {
    let em = simulated(50).await;
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&["create", "deployment", "web", "--image=nginx:1"])
        .await;
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    let logs = k.ok(&["logs", "deployment/web"]).await;
    assert_eq!(
        logs,
        "[weir-emulator] simulated container \"nginx\" started from image \"nginx:1\"; nothing runs in it, so its log holds only these lines\n"
    );

    // A Job's container whose command runs a program ends with the exit the kubelet reported.
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let mut job_pod = pod(
        "once",
        json!([{"name": "work", "image": "busybox", "command": ["sleep", "1"]}]),
    );
    job_pod.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    pods.create(&PostParams::default(), &job_pod).await.unwrap();
    eventually("the Pod succeeds", || async {
        let p = pods.get("once").await.unwrap();
        (p.status?.phase.as_deref() == Some("Succeeded")).then_some(())
    })
    .await;
    let lines: Vec<String> = pods
        .logs("once", &LogParams::default())
        .await
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        lines[1],
        "[weir-emulator] simulated container \"work\" exited with code 0 (Completed)"
    );
    let limited = LogParams {
        limit_bytes: Some(15),
        ..LogParams::default()
    };
    assert_eq!(
        pods.logs("once", &limited).await.unwrap(),
        "[weir-emulator]"
    );
}

#[tokio::test]
async fn log_requests_are_answered_as_a_real_api_server_answers_them() {
    let em = simulated(60_000).await;
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let two = json!([{"name": "a", "image": "nginx"}, {"name": "b", "image": "nginx"}]);
    pods.create(&PostParams::default(), &pod("pair", two))
        .await
        .unwrap();
    let one = json!([{"name": "app", "image": "nginx"}]);
    pods.create(&PostParams::default(), &pod("slow", one))
        .await
        .unwrap();
    eventually("the Pods are scheduled", || async {
        let p = pods.get("slow").await.unwrap();
        p.status?.container_statuses.map(|_| ())
    })
    .await;

    let bad = |e: kube::Error| {
        let s = api_error(e);
        (s.code, s.reason, s.message)
    };
    let unnamed = bad(pods.logs("pair", &LogParams::default()).await.unwrap_err());
    assert_eq!(
        unnamed,
        (
            400,
            "BadRequest".into(),
            "a container name must be specified for pod pair, choose one of: [a b]".into()
        )
    );
    let wrong = LogParams {
        container: Some("c".into()),
        ..LogParams::default()
    };
    assert_eq!(
        bad(pods.logs("pair", &wrong).await.unwrap_err()).2,
        "container c is not valid for pod pair"
    );
    assert_eq!(
        bad(pods.logs("slow", &LogParams::default()).await.unwrap_err()),
        (
            400,
            "BadRequest".into(),
            "container \"app\" in pod \"slow\" is waiting to start: ContainerCreating".into()
        )
    );
    let negative = LogParams {
        tail_lines: Some(-1),
        ..LogParams::default()
    };
    assert_eq!(
        bad(pods.logs("slow", &negative).await.unwrap_err()),
        (422, "Invalid".into(), "PodLogOptions \"slow\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0".into())
    );
    assert_eq!(
        bad(pods
            .logs("absent", &LogParams::default())
            .await
            .unwrap_err())
        .0,
        404
    );
}

#[tokio::test]
async fn an_unscheduled_pod_has_an_empty_log() {
    let em = emulator().await;
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let one = json!([{"name": "app", "image": "nginx", "command": ["echo", "hi"]}]);
    pods.create(&PostParams::default(), &pod("waiting", one))
        .await
        .unwrap();
    assert_eq!(
        pods.logs("waiting", &LogParams::default()).await.unwrap(),
        ""
    );
}

#[tokio::test]
async fn a_followed_log_stays_open_while_the_container_runs_and_ends_with_the_pod() {
    let em = simulated(20).await;
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let one = json!([{"name": "app", "image": "nginx", "command": ["echo", "serving"]}]);
    pods.create(&PostParams::default(), &pod("server", one))
        .await
        .unwrap();
    running(&pods, "server").await;
    let follow = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut lines = pods.log_stream("server", &follow).await.unwrap().lines();
    assert_eq!(lines.next().await.unwrap().unwrap(), "serving");
    let still_open =
        tokio::time::timeout(std::time::Duration::from_millis(300), lines.next()).await;
    assert!(still_open.is_err(), "a running container's log is followed");
    pods.delete("server", &DeleteParams::default())
        .await
        .unwrap();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next())
        .await
        .expect("the log ends when the Pod goes");
    assert!(ended.is_none());
}

#[tokio::test]
async fn discovery_lists_the_log_and_finalize_subresources() {
    let em = emulator().await;
    let core = em.client().list_core_api_resources("v1").await.unwrap();
    let find = |name: &str| {
        core.resources
            .iter()
            .find(|r| r.name == name)
            .map(|r| (r.kind.clone(), r.verbs.clone(), r.namespaced))
    };
    assert_eq!(
        find("pods/log"),
        Some(("Pod".into(), vec!["get".into()], true))
    );
    assert_eq!(
        find("namespaces/finalize"),
        Some(("Namespace".into(), vec!["update".into()], false))
    );
}

each_kubectl!(
    a_jobs_pods_logs_are_read_back_with_kubectl,
    a_container_that_is_not_a_literal_echo_logs_its_lifecycle_lines,
);
