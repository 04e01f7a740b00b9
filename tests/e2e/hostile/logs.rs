//! The evidence for the log attacks, read from the host's own log events (as recorded by
//! `weir_e2e::plugin_log`): lines cut to the line cap, the plugin's rate held, forged text escaped.

use weir::plugin::Limits;
use weir_e2e::plugin_log::{PluginLine, lines_of};

use super::checks::Verdict;

/// The hostile plugin's guest lines (not the reports of dropped ones).
fn guest_lines() -> Vec<PluginLine> {
    lines_of("hostile")
        .into_iter()
        .filter(|l| l.dropped.is_none())
        .collect()
}

/// Every line the plugin got into the log fits the line cap (printed: quoted, so two more bytes).
fn within_line_cap(lines: &[PluginLine]) -> Result<usize, String> {
    let cap = Limits::default().max_log_line_bytes + 2;
    let longest = lines.iter().map(|l| l.printed.len()).max().unwrap_or(0);
    if longest > cap {
        return Err(format!("a {longest}-byte line (cap {cap} printed)"));
    }
    Ok(longest)
}

/// `log-flood`: 20,000 lines of 1 KiB a call; the host keeps a call's 16 KiB and the plugin's
/// rate, drops the rest and says how many.
pub fn flood() -> Verdict {
    let limits = Limits::default();
    let lines = guest_lines();
    let flooded = lines
        .iter()
        .filter(|l| l.stream == "log" && l.printed.starts_with("\"LLLL"))
        .count();
    if flooded == 0 {
        return Err("none of its lines logged yet".into());
    }
    let longest = within_line_cap(&lines)?;
    let dropped: u64 = lines_of("hostile").iter().filter_map(|l| l.dropped).sum();
    let per_call = limits.max_log_bytes_per_call / limits.max_log_line_bytes;
    if dropped < (20_000 - per_call) as u64 {
        return Err(format!("{dropped} lines reported dropped"));
    }
    // The bucket holds one second's lines: at most a burst plus the rate since the first line.
    let first = lines.iter().filter_map(|l| l.at).min();
    let span = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
    let bound = f64::from(limits.log_lines_per_second) * (span + 1.0);
    if lines.len() as f64 > bound {
        return Err(format!(
            "{} lines of the plugin in {span:.1} s (bound {bound:.0})",
            lines.len()
        ));
    }
    Ok(format!(
        "{flooded} flood lines logged, longest {longest} bytes printed, {dropped} dropped and reported; the plugin's {} lines in {span:.1} s within {} a second",
        lines.len(),
        limits.log_lines_per_second
    ))
}

/// `log-forge`: its newline, carriage return and escape sequence reach the log escaped, inside
/// the text field of one plugin line, never as a line of their own.
pub fn forge() -> Verdict {
    let lines = guest_lines();
    let Some(forged) = lines.iter().find(|l| l.printed.contains("admin-token")) else {
        return Err("its line was not logged yet".into());
    };
    if forged.printed.contains(['\n', '\r', '\x1b']) {
        return Err(format!("printed raw: {:?}", forged.printed));
    }
    if !forged.printed.contains("\\n") {
        return Err(format!("the newline is gone: {}", forged.printed));
    }
    Ok(format!(
        "its forged line stayed one escaped field: {}",
        forged.printed.chars().take(60).collect::<String>()
    ))
}

/// `stdio`: 1 MiB to stdout and to stderr; each became a line no longer than the line cap.
pub fn stdio(status: &serde_json::Value) -> Verdict {
    let lines = guest_lines();
    let of = |stream: &str| {
        lines
            .iter()
            .filter(|l| l.stream == stream && l.printed.starts_with("\"OOOO"))
            .count()
    };
    let (out, err) = (of("stdout"), of("stderr"));
    if out == 0 || err == 0 {
        return Err(format!("{out} stdout and {err} stderr lines logged"));
    }
    let longest = within_line_cap(&lines)?;
    Ok(format!(
        "the call ended and was applied (writes accepted: stdout {}, stderr {}); logged as {out} stdout and {err} stderr lines, longest of the plugin {longest} bytes",
        status["stdout"], status["stderr"]
    ))
}
