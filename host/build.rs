//! Builds what the binary embeds: the engine component and the edge
//! component (`qmd-core` for `wasm32-wasip2`) and the static-site keyword
//! engine and filter module (`web/site` for `wasm32-unknown-unknown`). A nested cargo
//! with its own target directory: the outer build holds the lock on ours.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    // Relative to this package: cargo keeps such paths relative in its
    // fingerprint, where an absolute one outside the package stays the
    // path of whichever checkout last ran this script. (Another clone
    // building into the same target folder shares this script's
    // fingerprint, so its absolute paths left edits here unseen and
    // embedded that clone's site engine.) `www/site` is here for the same
    // reason: rustc records the widget's `include_str!` by absolute path.
    for watched in ["core", "wit", "Cargo.lock", "web/site", "www/site"] {
        println!("cargo:rerun-if-changed=../{watched}");
    }
    // The site engine and its filter module ship inside every `qmd site
    // build` bundle, so bundle and reader always match (as Pagefind's
    // binary embeds its wasm). One nested build makes both.
    let site_modules = std::cell::OnceCell::new();
    let site_target = || {
        site_modules
            .get_or_init(|| {
                let args = [
                    "--package",
                    "qmd-site-engine",
                    "--package",
                    "qmd-site-filter",
                    "--target",
                    "wasm32-unknown-unknown",
                    "--profile",
                    "site",
                ];
                let what = "the site engine and filter module (web/site for wasm32-unknown-unknown)";
                nested_build(&workspace, &args, what, "component", None).join("wasm32-unknown-unknown/site")
            })
            .clone()
    };
    embedded("QMD_SITE_ENGINE_WASM", "QMD_SITE_ENGINE_PATH", || site_target().join("qmd_site_engine.wasm"));
    embedded("QMD_SITE_FILTER_WASM", "QMD_SITE_FILTER_PATH", || site_target().join("qmd_site_filter.wasm"));
    // `qmd edge build` writes it out: qmd's HTTP API as a `wasi:http`
    // proxy, with the models inside it.
    // Its models run on the quantized kernels in wasm: built with simd128
    // (the flag, for every crate's loops) and relaxed SIMD's 8-bit dot
    // product (the feature, for our kernels alone: macerator does not
    // compile with the flag), as the page's relaxed build is; wasmtime, V8
    // and the edge runtimes built on them run both. A target folder of its
    // own, since the flags differ from the engine component's.
    embedded("QMD_EDGE_WASM", "QMD_EDGE_PATH", || {
        let args = [
            "--package",
            "qmd-core",
            "--features",
            "edge,relaxed-simd",
            "--target",
            "wasm32-wasip2",
            "--profile",
            "component",
        ];
        let what = "the edge component (qmd-core --features edge for wasm32-wasip2)";
        let flags = Some("-Ctarget-feature=+simd128");
        kept_as(&nested_build(&workspace, &args, what, "edge", flags), "qmd-edge.wasm")
    });
    let engine = embedded("QMD_COMPONENT_WASM", "QMD_COMPONENT_PATH", || {
        let args =
            ["--package", "qmd-core", "--features", "component", "--target", "wasm32-wasip2", "--profile", "component"];
        let what = "the engine component (qmd-core for wasm32-wasip2)";
        kept_as(&nested_build(&workspace, &args, what, "component", None), "qmd-engine.wasm")
    });
    emit_hash(&engine);
}

/// A wasm artifact the binary embeds, its path given to the compile as
/// `path_var`: the file `prebuilt_var` names when set (a packager's
/// build), else what `build` makes.
fn embedded(prebuilt_var: &str, path_var: &str, build: impl FnOnce() -> PathBuf) -> PathBuf {
    println!("cargo:rerun-if-env-changed={prebuilt_var}");
    let wasm = env::var(prebuilt_var).map_or_else(|_| build(), PathBuf::from);
    println!("cargo:rustc-env={path_var}={}", wasm.display());
    wasm
}

/// The component cargo just built for `wasm32-wasip2`, copied under a name
/// of its own: the engine and the edge component are the same crate with
/// other features, so each build replaces the other's `qmd_core.wasm`.
fn kept_as(target: &std::path::Path, name: &str) -> PathBuf {
    let kept = target.join(name);
    std::fs::copy(target.join("wasm32-wasip2/component/qmd_core.wasm"), &kept)
        .unwrap_or_else(|e| panic!("cannot copy the component to {}: {e}", kept.display()));
    kept
}

/// A stable hash of the component, so the precompiled-code cache is keyed
/// without hashing 2 MB on every CLI call.
fn emit_hash(wasm: &std::path::Path) {
    use std::hash::{Hash, Hasher};
    let bytes = std::fs::read(wasm).expect("component was just built");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    println!("cargo:rustc-env=QMD_COMPONENT_HASH={:016x}", hasher.finish());
}

/// Runs `cargo build --locked <args>` for a wasm artifact in the target
/// directory `<target>/<dir>` (the outer build holds the lock on ours),
/// without the outer build's flags (with `rustflags` instead, when given:
/// builds with other flags need a directory of their own, or each would
/// rebuild the other's dependencies); returns that directory.
fn nested_build(workspace: &std::path::Path, args: &[&str], what: &str, dir: &str, rustflags: Option<&str>) -> PathBuf {
    // OUT_DIR is <target>/<profile>/build/qmd-<hash>/out.
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let target = out_dir.ancestors().nth(4).unwrap().join(dir);
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.env_remove("CARGO_ENCODED_RUSTFLAGS");
    if let Some(flags) = rustflags {
        // One flag per 0x1f-separated item, as cargo reads this variable.
        command.env("CARGO_ENCODED_RUSTFLAGS", flags);
    }
    let status = command
        .current_dir(workspace)
        .arg("build")
        .args(args)
        .arg("--locked")
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .status()
        .unwrap_or_else(|e| panic!("failed to run cargo for {what}: {e}"));
    assert!(status.success(), "building {what} failed");
    target
}
