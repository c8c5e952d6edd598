//! `qmd pull`: fetch the models (placeholder until the download lands).

use std::process::ExitCode;

pub fn run(_refresh: bool) -> anyhow::Result<ExitCode> {
    anyhow::bail!("qmd pull is not implemented yet")
}
