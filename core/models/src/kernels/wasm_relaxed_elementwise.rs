//! Softmax and GELU for the page's relaxed-SIMD modules' embedding passes
//! ([`super::fused_element_wise`]): the exponential's polynomial on
//! relaxed SIMD's fused multiply-add (`f32x4.relaxed_madd`, one `vfmadd`
//! where the CPU has FMA) and its rounding on `f32x4.nearest`, where the
//! portable loops (`kernels::math::exp`, which compile to simd128)
//! take a multiply and an add for each coefficient and two additions to
//! round. Both were a seventh of a MiniLM pass in the page.
//!
//! The same range reduction, coefficients and formulas as the portable
//! code, so the values differ from it in the last bits only (whether a
//! multiply-add is fused is the engine's choice, as in
//! [`super::wasm_relaxed_f32`]).

use core::arch::wasm32::*;

use super::math::{EXP_DOMAIN, EXP_POLYNOMIAL, GELU_TANH, LN2_HI, LN2_LO, exp, gelu_tanh};

/// `row` replaced by its softmax, as `kernels::softmax`: the
/// maximum and the sum in eight lanes. (In wasm a function with a target
/// feature is safe to call: a module the engine lacks it for is refused.)
#[target_feature(enable = "relaxed-simd")]
pub fn softmax(row: &mut [f32]) {
    let body = row.len() - row.len() % 8;
    let (head, tail) = row.split_at_mut(body);
    // The maximum: `pmax(m, x)` is `m < x ? x : m`, the portable compare.
    let mut lanes = [f32x4_splat(f32::NEG_INFINITY); 2];
    for chunk in head.chunks_exact(8) {
        for (m, half) in lanes.iter_mut().zip(chunk.chunks_exact(4)) {
            *m = f32x4_pmax(*m, load(half));
        }
    }
    let top = lanes_of(lanes)
        .into_iter()
        .chain(tail.iter().copied())
        .fold(f32::NEG_INFINITY, |m, x| if x > m { x } else { m });
    // e^(x − max), summed in the same eight lanes.
    let shift = f32x4_splat(top);
    let mut sums = [f32x4_splat(0.0); 2];
    for chunk in head.chunks_exact_mut(8) {
        for (sum, half) in sums.iter_mut().zip(chunk.chunks_exact_mut(4)) {
            let e = exp4(f32x4_sub(load(half), shift));
            store(half, e);
            *sum = f32x4_add(*sum, e);
        }
    }
    tail.iter_mut().for_each(|x| *x = exp(*x - top));
    let total = lanes_of(sums).iter().sum::<f32>() + tail.iter().sum::<f32>();
    let inverse = 1.0 / total;
    let scale = f32x4_splat(inverse);
    for quad in head.chunks_exact_mut(4) {
        store(quad, f32x4_mul(load(quad), scale));
    }
    tail.iter_mut().for_each(|x| *x *= inverse);
}

/// `x = gelu(x) · factor`, or `gelu(x)` where `factors` is empty, as
/// `arch::ops::gelu_times`.
#[target_feature(enable = "relaxed-simd")]
pub fn gelu_times(x: &mut [f32], factors: &[f32]) {
    let body = if factors.is_empty() { x.len() } else { x.len().min(factors.len()) };
    let body = body - body % 4;
    let (head, tail) = x.split_at_mut(body);
    if factors.is_empty() {
        head.chunks_exact_mut(4).for_each(|quad| store(quad, gelu4(load(quad))));
        tail.iter_mut().for_each(|v| *v = gelu_tanh(*v));
    } else {
        for (quad, f) in head.chunks_exact_mut(4).zip(factors.chunks_exact(4)) {
            store(quad, f32x4_mul(gelu4(load(quad)), load(f)));
        }
        tail.iter_mut().zip(&factors[body..]).for_each(|(v, f)| *v = gelu_tanh(*v) * f);
    }
}

/// [`gelu_tanh`] on four lanes.
#[inline]
#[target_feature(enable = "relaxed-simd")]
fn gelu4(v: v128) -> v128 {
    let (scale, cube) = GELU_TANH;
    let inner = f32x4_relaxed_madd(f32x4_mul(v, v), f32x4_splat(cube), f32x4_splat(1.0));
    // 2y, the doubling exact as in the portable `exp(2.0 * y)`.
    let twice_y = f32x4_mul(f32x4_mul(f32x4_splat(scale), v), f32x4_add(inner, inner));
    let e = exp4(twice_y);
    f32x4_mul(v, f32x4_div(e, f32x4_add(e, f32x4_splat(1.0))))
}

/// `kernels::math::exp` on four lanes: the bounds by `pmin`/`pmax`
/// (NaN passes, as through `clamp`), n by `nearest` (ties to even, as
/// `round_to_even`), `x − n·ln 2` and the polynomial on multiply-adds.
#[inline]
#[target_feature(enable = "relaxed-simd")]
fn exp4(x: v128) -> v128 {
    let x = f32x4_pmin(f32x4_pmax(x, f32x4_splat(EXP_DOMAIN.0)), f32x4_splat(EXP_DOMAIN.1));
    let n = f32x4_nearest(f32x4_mul(x, f32x4_splat(std::f32::consts::LOG2_E)));
    let r = f32x4_relaxed_nmadd(n, f32x4_splat(LN2_HI), x);
    let r = f32x4_relaxed_nmadd(n, f32x4_splat(LN2_LO), r);
    let [first, rest @ ..] = EXP_POLYNOMIAL;
    let p = rest.iter().fold(f32x4_splat(first), |p, &c| f32x4_relaxed_madd(p, r, f32x4_splat(c)));
    let e = f32x4_relaxed_madd(p, f32x4_mul(r, r), f32x4_add(r, f32x4_splat(1.0)));
    let two_to_n = i32x4_shl(i32x4_add(i32x4_trunc_sat_f32x4(n), i32x4_splat(127)), 23);
    f32x4_mul(e, two_to_n)
}

/// Four values from a slice of four.
#[inline(always)]
fn load(quad: &[f32]) -> v128 {
    assert_eq!(quad.len(), 4);
    // SAFETY: four f32 in bounds (checked); `v128_load` reads unaligned.
    unsafe { v128_load(quad.as_ptr() as *const v128) }
}

/// Four values into a slice of four.
#[inline(always)]
fn store(quad: &mut [f32], v: v128) {
    assert_eq!(quad.len(), 4);
    // SAFETY: as in `load`.
    unsafe { v128_store(quad.as_mut_ptr() as *mut v128, v) }
}

/// Two vectors' eight lanes, in order.
fn lanes_of([a, b]: [v128; 2]) -> [f32; 8] {
    [
        f32x4_extract_lane::<0>(a),
        f32x4_extract_lane::<1>(a),
        f32x4_extract_lane::<2>(a),
        f32x4_extract_lane::<3>(a),
        f32x4_extract_lane::<0>(b),
        f32x4_extract_lane::<1>(b),
        f32x4_extract_lane::<2>(b),
        f32x4_extract_lane::<3>(b),
    ]
}
