//! The `weir run --plugins DIR --kubeconfig PATH` binary reconciles a Blog, shows where its plugin
//! memory goes on `/metrics`, and stops cleanly on SIGTERM.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn weir_run_reconciles_a_blog_and_exits_on_sigterm() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weir = root.join("target/debug/weir");
    anyhow::ensure!(
        weir.exists(),
        "{} is missing: run `cargo build -p weir` first",
        weir.display()
    );
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        anyhow::bail!("this scenario starts the binary against the emulator; unset KUBECONFIG");
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let dir = std::env::temp_dir().join(format!("weir-run-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("plugins"))?;
    std::fs::copy(
        root.join("target/plugins/blog.wasm"),
        dir.join("plugins/blog.wasm"),
    )?;
    emulator.write_kubeconfig(&dir.join("kubeconfig"))?;
    // A port free a moment ago, for `/metrics`.
    let listen = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;

    let mut child = Command::new(&weir)
        .args([
            "run",
            "--listen",
            &listen.to_string(),
            "--resync-secs",
            "5",
            "--plugins",
        ])
        .arg(dir.join("plugins"))
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .env("WEIR_LOG", "info")
        .stderr(Stdio::null())
        .spawn()?;
    env.create(
        &kinds::blog(),
        "cli-blog",
        json!({"title": "From the CLI", "replicas": 2}),
    )
    .await?;
    let ready = wait_ready(&env.api(&kinds::blog()), "cli-blog").await;
    let metrics = tokio::task::spawn_blocking(move || metrics(listen)).await?;

    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    anyhow::ensure!(term.success(), "kill -TERM failed");
    let mut exited = None;
    for _ in 0..100 {
        if let Some(status) = child.try_wait()? {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if exited.is_none() {
        child.kill()?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    ready?;
    let status =
        exited.ok_or_else(|| anyhow::anyhow!("weir run did not exit within 5 s of SIGTERM"))?;
    assert!(status.success(), "weir run exited with {status}");
    let metrics = metrics?;
    let code = gauge(&metrics, "weir_plugin_code_bytes{plugin=\"blog\"}");
    assert!(
        code.is_some_and(|bytes| bytes > 10_000.0),
        "the Blog plugin's compiled code is counted: {code:?}"
    );
    assert!(
        gauge(&metrics, "weir_plugin_pool_resident_bytes").is_some(),
        "the instance pool's resident bytes are shown:\n{metrics}"
    );
    Ok(())
}

/// The body of `GET /metrics` from the host's operations server.
fn metrics(addr: std::net::SocketAddr) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("not an HTTP response: {response}"))?;
    anyhow::ensure!(head.contains(" 200 "), "GET /metrics: {head}");
    Ok(body.to_owned())
}

/// The value of the sample `name` (with its labels) in a text exposition.
fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}
