//! Marks tests whose data set is missing as ignored, so the test summary
//! says "ignored" (with the reason) instead of a test passing silently.
//! Under `CI=true` nothing is ignored: the test runs and fails, naming the
//! missing data set.

#[path = "src/data.rs"]
mod data;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(qmd_missing_beir)");
    for var in ["QMD_DATA_DIR", "XDG_CACHE_HOME", "HOME", "CI"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    for name in data::BEIR_SETS {
        // A path that does not exist makes cargo rerun this script each
        // build, so data fetched later is noticed.
        println!("cargo::rerun-if-changed={}", data::beir_dir(name).join("qrels/test.tsv").display());
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !in_ci && !data::BEIR_SETS.iter().all(|name| data::beir_present(name)) {
        println!("cargo::rustc-cfg=qmd_missing_beir");
        println!("cargo::warning=BEIR data not found, its retrieval tests are ignored: {}", data::DATA_HINT);
    }
}
