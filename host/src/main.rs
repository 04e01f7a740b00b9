//! The `weir` command line.

fn main() -> anyhow::Result<()> {
    Ok(())
}
