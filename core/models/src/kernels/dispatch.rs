//! Which instruction-set level the CPU kernels run at: the widest the CPU
//! has, or less where a cap is set. The cap lets one machine run the paths
//! an AVX2-only or a no-SIMD machine takes (the host reads it from
//! `QMD_KERNELS`; the tests set it directly). Every run-time feature check
//! of the kernels goes through [`Level::current`], so a cap reaches all of
//! them: the quantized products, the activation quantizer, the attention
//! and the element-wise loops.
//!
//! The level is read at every product, so a cap applies from the next one
//! on (weights are packed per product, never for a level at load).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level of the x86-64 kernels, narrowest first. (The
/// other targets have one level each: NEON, with `sdot` where the CPU has
/// it, picked by its own check; WebAssembly SIMD chosen at build time.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The portable loops, as on a CPU without SIMD beyond the baseline.
    Portable = 0,
    /// AVX2 with FMA and F16C.
    Avx2 = 1,
    /// AVX-512 VNNI (with VL and BW) on top of AVX2.
    Avx512Vnni = 2,
}

/// No cap.
const UNCAPPED: u8 = u8::MAX;

static CAP: AtomicU8 = AtomicU8::new(UNCAPPED);

impl Level {
    /// Every level, narrowest first.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512Vnni];

    /// The name `QMD_KERNELS` takes.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512Vnni => "avx512-vnni",
        }
    }

    /// The level named `name` (as [`Level::name`] writes it).
    pub fn parse(name: &str) -> Result<Level, String> {
        let wanted = name.trim().to_ascii_lowercase();
        Level::ALL.into_iter().find(|l| l.name() == wanted).ok_or_else(|| {
            let names: Vec<&str> = Level::ALL.iter().map(|l| l.name()).collect();
            format!("unknown kernel level {name:?} (one of: {})", names.join(", "))
        })
    }

    /// The widest level this CPU runs, whatever the cap.
    pub fn detected() -> Level {
        static DETECTED: OnceLock<Level> = OnceLock::new();
        *DETECTED.get_or_init(detect)
    }

    /// The level the kernels run at now: the detected one, at most the cap.
    #[inline]
    pub fn current() -> Level {
        let detected = Level::detected();
        match CAP.load(Ordering::Relaxed) {
            UNCAPPED => detected,
            cap => detected.min(Level::ALL[cap as usize]),
        }
    }

    /// Caps the kernels at `self` (a level the CPU lacks changes nothing:
    /// the cap only narrows).
    pub fn cap(self) {
        CAP.store(self as u8, Ordering::Relaxed);
    }

    /// Lifts the cap: the widest level the CPU has.
    pub fn uncap() {
        CAP.store(UNCAPPED, Ordering::Relaxed);
    }
}

/// Whether the AVX2 kernels (with FMA and F16C) may run.
#[inline]
pub fn avx2() -> bool {
    Level::current() >= Level::Avx2
}

/// Whether the AVX-512 VNNI kernels may run.
#[inline]
pub fn avx512_vnni() -> bool {
    Level::current() >= Level::Avx512Vnni
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Level {
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c");
    let vnni = is_x86_feature_detected!("avx512vnni")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512bw");
    match (avx2, vnni) {
        (true, true) => Level::Avx512Vnni,
        (true, false) => Level::Avx2,
        _ => Level::Portable,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Level {
    Level::Portable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_say_what_is_taken() {
        for level in Level::ALL {
            assert_eq!(Level::parse(level.name()), Ok(level));
        }
        assert_eq!(Level::parse(" AVX2 "), Ok(Level::Avx2));
        let err = Level::parse("sse9").unwrap_err();
        assert!(err.contains("\"sse9\"") && err.contains("portable, avx2, avx512-vnni"), "{err}");
    }
}
