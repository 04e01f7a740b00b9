//! What the guest can reach of its surroundings: environment, files, network. Each probe
//! reports what it found or the error it met, so the outcome lands in the parent's status.

use serde_json::{Value, json};

fn outcome<T>(result: std::io::Result<T>, found: impl FnOnce(T) -> Value) -> Value {
    match result {
        Ok(v) => json!({"ok": found(v)}),
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// The environment variables and arguments the guest sees.
pub fn env() -> Value {
    let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
    let args: Vec<String> = std::env::args().collect();
    let cwd = outcome(std::env::current_dir(), |p| json!(p.display().to_string()));
    json!({"vars": vars, "args": args, "cwd": cwd})
}

/// Reads, lists and creates files.
pub fn fs() -> Value {
    let read = |path: &str| outcome(std::fs::read_to_string(path), |t| json!(t.len()));
    let list = |path: &str| {
        outcome(std::fs::read_dir(path), |entries| {
            json!(entries.filter_map(Result::ok).count())
        })
    };
    json!({
        "readPasswd": read("/etc/passwd"),
        "readToken": read("/var/run/secrets/kubernetes.io/serviceaccount/token"),
        "listRoot": list("/"),
        "listHere": list("."),
        "create": outcome(std::fs::write("/tmp/hostile", b"x"), |()| json!(true)),
    })
}

/// Connects to `target` (`host:port`) over TCP, binds a UDP socket and resolves a name.
pub fn net(target: &str) -> Value {
    use std::net::ToSocketAddrs;
    json!({
        "tcp": outcome(std::net::TcpStream::connect(target), |_| json!(true)),
        "udp": outcome(std::net::UdpSocket::bind("0.0.0.0:0"), |_| json!(true)),
        "dns": outcome("kubernetes.default.svc:443".to_socket_addrs(), |a| json!(a.count())),
    })
}
