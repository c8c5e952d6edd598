//! `qmd-fuzz [--iterations N] [--seed S] [--artifacts DIR] [TARGET…]`: runs
//! the fuzz targets of `qmd_tests::fuzz` (all by default) for N mutated
//! inputs each and prints one line per target. A panicking input is saved
//! to DIR (default `fuzz-artifacts`) and the run exits 1.
//! `qmd-fuzz --replay TARGET FILE` runs one saved input again.

use std::time::Instant;

use qmd_tests::fuzz::{Target, run};

// Counted, so each input is held to its target's memory bound.
#[global_allocator]
static ALLOCATOR: qmd_tests::allocation::Counting = qmd_tests::allocation::Counting;

const USAGE: &str =
    "usage: qmd-fuzz [--iterations N] [--seed S] [--artifacts DIR] [TARGET…] | qmd-fuzz --replay TARGET FILE";

/// Every target: the engine's parsers and readers, then the site
/// bundle's readers and the chunker.
fn targets() -> Vec<Target> {
    qmd_tests::fuzz::targets().into_iter().chain(qmd_tests::fuzz_site::targets()).collect()
}

fn fail(message: &str) -> ! {
    eprintln!("qmd-fuzz: {message}\n{USAGE}");
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut iterations, mut seed, mut artifacts) = (10_000u64, 1u64, String::from("fuzz-artifacts"));
    let mut names = Vec::new();
    let number = |v: Option<String>, flag: &str| {
        v.and_then(|v| v.parse().ok()).unwrap_or_else(|| fail(&format!("{flag} needs a number")))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iterations" => iterations = number(args.next(), "--iterations"),
            "--seed" => seed = number(args.next(), "--seed"),
            "--artifacts" => artifacts = args.next().unwrap_or_else(|| fail("--artifacts needs a folder")),
            "--replay" => {
                let (Some(name), Some(file)) = (args.next(), args.next()) else { fail("--replay needs TARGET FILE") };
                let target = targets().into_iter().find(|t| t.name == name).unwrap_or_else(|| fail("unknown target"));
                let input = std::fs::read(&file).unwrap_or_else(|e| fail(&format!("{file}: {e}")));
                (target.run)(&input);
                println!("{name}: {file} ran without a panic");
                return;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            name => names.push(name.to_string()),
        }
    }
    let all = targets();
    if let Some(unknown) = names.iter().find(|n| !all.iter().any(|t| t.name == n.as_str())) {
        fail(&format!("unknown target {unknown}"));
    }
    // Panics are caught and counted; their default report would flood stderr.
    std::panic::set_hook(Box::new(|_| {}));
    let mut crashed = false;
    println!("| target | iterations | crashes | seconds |\n|---|---:|---:|---:|");
    for target in all.iter().filter(|t| names.is_empty() || names.iter().any(|n| n == t.name)) {
        let start = Instant::now();
        let report = run(target, iterations, seed);
        println!(
            "| {} | {} | {} | {:.1} |",
            target.name,
            report.iterations,
            report.crashes.len(),
            start.elapsed().as_secs_f64()
        );
        for (i, (input, message)) in report.crashes.iter().enumerate().take(5) {
            crashed = true;
            std::fs::create_dir_all(&artifacts).expect("create the artifacts folder");
            let file = format!("{artifacts}/{}-{i}.bin", target.name);
            std::fs::write(&file, input).expect("save the crashing input");
            eprintln!("{}: crash saved to {file}: {message}", target.name);
        }
    }
    if crashed {
        std::process::exit(1);
    }
}
