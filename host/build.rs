//! Links the `weir` binary with packed relative relocations (`-z pack-relative-relocs`,
//! `DT_RELR`) where the C library it is built against can load them.
//!
//! The binary is position-independent, and about 1.6 MiB of it is relative relocations in the
//! classic form (`.rela.dyn`, 24 bytes each), every one read when the process starts. Packed,
//! they take about 20 KiB, and every `weir run` process peaks about 2.5 MiB lower (three
//! sharded replicas at 3,000 Blogs, `tests/BENCHMARKS.md`), which counts once per replica.
//!
//! GNU ld marks such a binary as needing `GLIBC_ABI_DT_RELR`, which glibc has defined since
//! 2.36; an older glibc refuses to start it. So the flag is given only when building for
//! Linux with glibc, not cross-compiling, and the build machine's glibc is 2.36 or newer: the
//! binary then runs where it was built and on anything newer (the image's build stage and its
//! base are both Debian 12, glibc 2.36). Anywhere else the binary links as before.

use std::process::Command;

/// The first glibc that loads packed relative relocations.
const RELR_SINCE: (u32, u32) = (2, 36);

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && gnu && glibc().is_some_and(|v| v >= RELR_SINCE) {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc version (`getconf GNU_LIBC_VERSION`: `glibc 2.36`).
fn glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    let minor = minor.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
