//! Builds the engine component (`qmd-core` for `wasm32-wasip2`) and the
//! static-site keyword engine (`qmd-site-engine` for
//! `wasm32-unknown-unknown`) so the binary can embed both. A nested cargo with its own target directory: the
//! outer build holds the lock on ours.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    for watched in ["core/src", "core/Cargo.toml", "wit", "Cargo.lock", "web/site"] {
        println!("cargo:rerun-if-changed={}", workspace.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=QMD_COMPONENT_WASM");
    println!("cargo:rerun-if-env-changed=QMD_SITE_ENGINE_WASM");
    build_site_engine(&workspace);

    // A prebuilt component may be supplied (e.g. by a packager).
    if let Ok(prebuilt) = env::var("QMD_COMPONENT_WASM") {
        println!("cargo:rustc-env=QMD_COMPONENT_PATH={prebuilt}");
        emit_hash(std::path::Path::new(&prebuilt));
        return;
    }

    // OUT_DIR is <target>/<profile>/build/qmd-<hash>/out.
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let target_root = out_dir.ancestors().nth(4).unwrap().to_path_buf();
    let component_target = target_root.join("component");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&workspace)
        .args(["build", "--package", "qmd-core", "--features", "component", "--target", "wasm32-wasip2"])
        .args(["--profile", "component", "--locked"])
        .env("CARGO_TARGET_DIR", &component_target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .status()
        .expect("failed to run cargo for the engine component");
    assert!(status.success(), "building the engine component (qmd-core for wasm32-wasip2) failed");
    let wasm = component_target.join("wasm32-wasip2/component/qmd_core.wasm");
    println!("cargo:rustc-env=QMD_COMPONENT_PATH={}", wasm.display());
    emit_hash(&wasm);
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

/// The site engine ships inside every `qmd site build` bundle, so bundle
/// and reader always match (as Pagefind's binary embeds its wasm).
fn build_site_engine(workspace: &std::path::Path) {
    if let Ok(prebuilt) = env::var("QMD_SITE_ENGINE_WASM") {
        println!("cargo:rustc-env=QMD_SITE_ENGINE_PATH={prebuilt}");
        return;
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let target = out_dir.ancestors().nth(4).unwrap().join("component");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace)
        .args(["build", "--package", "qmd-site-engine", "--target", "wasm32-unknown-unknown"])
        .args(["--profile", "site", "--locked"])
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .status()
        .expect("failed to run cargo for the site engine");
    assert!(status.success(), "building the site engine (qmd-site-engine for wasm32-unknown-unknown) failed");
    let wasm = target.join("wasm32-unknown-unknown/site/qmd_site_engine.wasm");
    println!("cargo:rustc-env=QMD_SITE_ENGINE_PATH={}", wasm.display());
}
