//! The Blog rows: what one measurement gives, and the tables they print.

use weir_emulator::RequestRecord;

/// One measured controller at one size.
pub(crate) struct Row {
    pub(crate) system: String,
    pub(crate) blogs: usize,
    pub(crate) seconds: f64,
    pub(crate) requests_per_blog: f64,
    pub(crate) resync_writes: usize,
    pub(crate) rss_mib: f64,
    /// Resident set after convergence and two resyncs.
    pub(crate) rest_rss_mib: f64,
    /// `weir run`'s own account of its memory, at rest (none for the twin).
    pub(crate) memory: Option<super::memory::Breakdown>,
}

/// Breaks the writes of `log` down by method, resource (and subresource) and response code,
/// to show where a requests/Blog figure above the minimum comes from.
pub(crate) fn print_writes(system: &str, log: &[RequestRecord]) {
    for (what, n) in by_request(log.iter().filter(|r| r.is_write())) {
        eprintln!("{system}: {n:>7} × {what}");
    }
}

/// How many of `requests` share each method, resource (and subresource, without the object's
/// name), response code and content type: `PATCH deployments 409 Some("application/...")`.
pub(crate) fn by_request<'a>(
    requests: impl Iterator<Item = &'a RequestRecord>,
) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for r in requests {
        let segments: Vec<&str> = r.path.split('/').collect();
        let resource = segments
            .iter()
            .position(|s| *s == "namespaces")
            .map(|i| {
                let rest: Vec<&str> = segments.iter().skip(i + 2).step_by(2).copied().collect();
                rest.join("/")
            })
            .unwrap_or_else(|| r.path.clone());
        let what = format!("{} {resource} {} {:?}", r.method, r.status, r.content_type);
        *counts.entry(what).or_default() += 1;
    }
    counts
}

pub(crate) fn print(rows: &[Row]) {
    println!(
        "| {:<28} | {:>6} | {:>11} | {:>13} | {:>17} | {:>12} | {:>12} |",
        "controller",
        "Blogs",
        "all Ready s",
        "requests/Blog",
        "writes, 2 resyncs",
        "peak RSS MiB",
        "rest RSS MiB"
    );
    println!(
        "|{:-<30}|{:->8}|{:->13}|{:->15}|{:->19}|{:->14}|{:->14}|",
        "", "", "", "", "", "", ""
    );
    for r in rows {
        println!(
            "| {:<28} | {:>6} | {:>11.2} | {:>13.2} | {:>17} | {:>12.1} | {:>12.1} |",
            r.system,
            r.blogs,
            r.seconds,
            r.requests_per_blog,
            r.resync_writes,
            r.rss_mib,
            r.rest_rss_mib
        );
    }
}

pub(crate) fn print_ratios(pairs: &[(&Row, &Row)]) {
    println!(
        "\n| {:<28} | {:>6} | {:>11} | {:>13} | {:>12} | {:>12} |",
        "Weir / twin(s)", "Blogs", "all Ready", "requests/Blog", "peak RSS", "rest RSS"
    );
    println!(
        "|{:-<30}|{:->8}|{:->13}|{:->15}|{:->14}|{:->14}|",
        "", "", "", "", "", ""
    );
    for (w, n) in pairs {
        println!(
            "| {:<28} | {:>6} | {:>10.2}x | {:>12.2}x | {:>11.2}x | {:>11.2}x |",
            w.system,
            w.blogs,
            w.seconds / n.seconds,
            w.requests_per_blog / n.requests_per_blog,
            w.rss_mib / n.rss_mib,
            w.rest_rss_mib / n.rest_rss_mib
        );
    }
}

/// Adds the measured rows of one size; a Weir and a twin row make a pair for the ratios.
pub(crate) fn push(
    rows: &mut Vec<Row>,
    pairs: &mut Vec<(usize, usize)>,
    w: Option<Row>,
    t: Option<Row>,
) {
    let pair = w.is_some() && t.is_some();
    rows.extend(w);
    rows.extend(t);
    if pair {
        pairs.push((rows.len() - 2, rows.len() - 1));
    }
}
