//! `qmd`: the command line over the engine component.

mod cli;
mod component;
mod lock;
mod mcp;
mod models;
mod paths;
mod web;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(error) => {
            // A closed pipe (`qmd search x | head`) is not a failure.
            if error.chain().any(|e| {
                e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("{error:#}");
            ExitCode::FAILURE
        }
    }
}
