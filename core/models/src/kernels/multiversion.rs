//! Element-wise loops (softmax, GELU, SiLU) compiled twice: for the
//! baseline target and, on x86-64, for AVX2 with FMA, picked at run time.
//! The code is the same; the AVX2 copy gets twice the baseline SSE2's
//! lanes and fused multiply-adds in the exponential's polynomial.

/// `multiversion!(fn name(args) { body })` defines `name`, which runs
/// `body` compiled with AVX2 and FMA where the CPU has them.
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn portable($($arg: $ty),*) $body

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2($($arg: $ty),*) {
                portable($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            if $crate::kernels::dispatch::avx2() {
                // SAFETY: the CPU has the features.
                return unsafe { avx2($($arg),*) };
            }
            portable($($arg),*)
        }
    };
}

pub(crate) use multiversion;
