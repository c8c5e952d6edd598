use super::*;

/// A xorshift64 stream: reproducible test bytes without a crate.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A `rows × cols` matrix of `kind` with pseudo-random contents: random
/// bytes are valid blocks once their f16 scales are set to sane values.
pub(crate) fn random_matrix(kind: GgmlType, rows: usize, cols: usize, seed: u64) -> Vec<u8> {
    let mut next = xorshift(seed);
    let mut value = move || ((next() % 2001) as f32 - 1000.0) / 1000.0;
    let count = rows * cols;
    match kind {
        GgmlType::F32 => return (0..count).flat_map(|_| value().to_le_bytes()).collect(),
        GgmlType::F16 => return (0..count).flat_map(|_| half::f16::from_f32(value()).to_le_bytes()).collect(),
        GgmlType::BF16 => return (0..count).flat_map(|_| half::bf16::from_f32(value()).to_le_bytes()).collect(),
        _ => {}
    }
    let mut bytes: Vec<u8> = (0..kind.bytes_for(count).unwrap()).map(|_| (value() * 127.0) as i8 as u8).collect();
    // Offsets of the f16 scales (and minimums) in each block.
    let scale_offsets: &[usize] = match kind {
        GgmlType::Q6_K => &[208],
        GgmlType::Q8_0 | GgmlType::Q4_0 => &[0],
        _ => &[0, 2],
    };
    for block in bytes.chunks_exact_mut(kind.block_bytes()) {
        for &at in scale_offsets {
            block[at..at + 2].copy_from_slice(&half::f16::from_f32(value() / 20.0).to_le_bytes());
        }
    }
    bytes
}

/// `got` holds `expected`'s sums up to float summation order: within
/// 1e-5 of the largest (scale and minimum terms may cancel).
pub(crate) fn assert_same_sums(got: &[f32], expected: &[f32], what: &str) {
    let largest = expected.iter().fold(0f32, |m, e| m.max(e.abs()));
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!((g - e).abs() <= 1e-5 * largest, "{what} [{i}]: {g} vs {e}");
    }
}

/// Runs `check` on each AArch64 kernel variant this CPU has (`dotprod`
/// only where it has the instruction).
#[cfg(target_arch = "aarch64")]
pub(crate) fn each_arm_kernel<K>(kernels: [(&str, K); 2], mut check: impl FnMut(&str, K)) {
    for (name, kernel) in kernels {
        if name != "dotprod" || std::arch::is_aarch64_feature_detected!("dotprod") {
            check(name, kernel);
        }
    }
}

/// The browser's kernels of this build, Q8_0's or Q4's: simd128, and
/// relaxed SIMD in its build (scripts/test-wasm.sh runs both builds'
/// tests under wasmtime). Each equals the scalar kernel bit for bit.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn wasm_kernels(q8_0: bool) -> Vec<(&'static str, Q8Kernel)> {
    #[allow(unused_mut)] // one kernel without the relaxed-simd feature
    let mut kernels = vec![("simd128", if q8_0 { wasm::q8_0_matmul as Q8Kernel } else { wasm::q4_matmul })];
    #[cfg(feature = "relaxed-simd")]
    {
        kernels.push(("relaxed", if q8_0 { wasm_relaxed::q8_0_matmul as Q8Kernel } else { wasm_relaxed::q4_matmul }));
        if q8_0 {
            kernels.push(("relaxed, split dot", wasm_relaxed::q8_0_matmul_split));
        }
    }
    kernels
}

/// The browser kernels' f16 conversion, four lanes at a time, is `half`'s
/// for every value (a NaN for each NaN), whatever the lanes' high bits.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[test]
fn wasm_f16_conversion_is_exact_for_every_value() {
    use core::arch::wasm32::*;
    for first in (0..=u16::MAX).step_by(4) {
        let bits = [0, 1, 2, 3].map(|j| u32::from(first + j) | (0xabcd_0000 * (j & 1) as u32));
        let got = wasm::f16x4_to_f32(u32x4(bits[0], bits[1], bits[2], bits[3]));
        let got = [
            f32x4_extract_lane::<0>(got),
            f32x4_extract_lane::<1>(got),
            f32x4_extract_lane::<2>(got),
            f32x4_extract_lane::<3>(got),
        ];
        for (j, g) in got.into_iter().enumerate() {
            let expected = half::f16::from_bits(first + j as u16).to_f32();
            if expected.is_nan() {
                assert!(g.is_nan(), "{:#06x}: {g}", first + j as u16);
            } else {
                assert_eq!(g.to_bits(), expected.to_bits(), "{:#06x}: {g} vs {expected}", first + j as u16);
            }
        }
    }
}

/// The browser's slice conversions equal `half`'s: f16 rows widened (every
/// value, odd lengths), and f32 values rounded to f16 and back, ties to
/// even, over a spread of every exponent and the edges of f16's range.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[test]
fn wasm_f16_slices_convert_as_half_does() {
    let halves: Vec<half::f16> = (0..=u16::MAX).map(half::f16::from_bits).collect();
    let mut widened = vec![0f32; halves.len() - 3];
    wasm::widen_f16(&halves[3..], &mut widened);
    for (h, w) in halves[3..].iter().zip(&widened) {
        assert!(h.to_f32().to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()), "{:#06x}", h.to_bits());
    }
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    // Every 4099th bit pattern, and every pattern around f16's limits
    // (65504, 65520, 2^-14, 2^-24) and their ties.
    let mut values: Vec<f32> = (0..=u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)).collect();
    for edge in [65504f32, 65520.0, 2f32.powi(-14), 2f32.powi(-24), 2f32.powi(-25), 1.0, 2048.0] {
        let bits = edge.to_bits();
        values.extend((bits - 0x4000..bits + 0x4000).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]));
    }
    let mut rounded = values.clone();
    wasm::round_to_f16(&mut rounded);
    for (v, r) in values.iter().zip(&rounded) {
        let expected = half::f16::from_f32(*v).to_f32();
        assert!(same(*r, expected), "{v:e} ({:#010x}): {r:e} vs {expected:e}", v.to_bits());
    }
}

/// The relaxed module's Q8_0 trial (products of many rows taking turns
/// on its two kernels until one wins) gives the scalar kernel's sums on
/// every product, before and after it decides. A clock that advances a
/// step a reading stands in for the page's.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
#[test]
fn the_relaxed_modules_q8_0_trial_keeps_every_product_exact() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static TICKS: AtomicU32 = AtomicU32::new(0);
    install_clock(|| f64::from(TICKS.fetch_add(1, Ordering::Relaxed)));
    // What the page's device line says before any product, and after.
    if Q8_0_TRIAL.winner().is_none() {
        assert_eq!(instruction_set(), "WebAssembly relaxed SIMD (Q8_0 kernels on trial)");
    }
    let m = PREPACK_ROWS + 3;
    let shapes = [(40, 64), (24, 96)];
    let matrices: Vec<Vec<u8>> = shapes.iter().map(|&(n, k)| random_matrix(GgmlType::Q8_0, n, k, n as u64)).collect();
    for product in 0..40 {
        let (n, k) = shapes[product % 2];
        let w = QMatrix { kind: GgmlType::Q8_0, rows: n, cols: k, data: &matrices[product % 2] };
        let x = activations(m, k);
        // Both activation forms (an embedding model's 7 bits, 8 else)
        // on both shapes.
        let bits = if product % 4 < 2 { Bits::Seven } else { Bits::Eight };
        let mut expected = vec![0f32; m * n];
        scalar::q8_0_matmul(&QuantizedRows::quantize_to(&x, k, bits), 0..m, &w, &mut expected);
        let mut got = vec![0f32; m * n];
        match bits {
            Bits::Seven => for_embedding(|| matmul(&x, &w, None, &mut got)),
            Bits::Eight => matmul(&x, &w, None, &mut got),
        }
        assert_eq!(got, expected, "product {product}, {m}×{n}×{k}, {bits:?}");
    }
    assert!(Q8_0_TRIAL.winner().is_some(), "the trial decided within 40 products");
    assert!(!instruction_set().contains("on trial"), "{}", instruction_set());
}

/// [`for_embedding`]'s Q8_0 products take 7-bit activations in the
/// relaxed module and 8-bit ones elsewhere; outside it, and after it
/// returns or unwinds, every build takes 8 bits. Bits are told apart by
/// comparing with the scalar kernel on each quantization.
#[test]
fn for_embedding_takes_7_bit_activations_in_the_relaxed_module_alone() {
    let (n, k) = (24, 96);
    let bytes = random_matrix(GgmlType::Q8_0, n, k, 5);
    let w = QMatrix { kind: GgmlType::Q8_0, rows: n, cols: k, data: &bytes };
    for m in [1, 9, PREPACK_ROWS_OR_MORE] {
        let x = activations(m, k);
        let product = |bits| {
            let mut out = vec![0f32; m * n];
            scalar::q8_0_matmul(&QuantizedRows::quantize_to(&x, k, bits), 0..m, &w, &mut out);
            out
        };
        let (eight, seven) = (product(Bits::Eight), product(Bits::Seven));
        assert_ne!(eight, seven, "the two quantizations differ on these inputs");
        let run = || {
            let mut out = vec![0f32; m * n];
            matmul(&x, &w, None, &mut out);
            out
        };
        let relaxed = cfg!(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"));
        // Nearer the one quantization than the other by far (the x86
        // packed kernel rounds differently from the scalar one, slightly).
        let distance = |a: &[f32], b: &[f32]| a.iter().zip(b).fold(0f32, |d, (x, y)| d.max((x - y).abs()));
        let assert_took = |got: &[f32], bits: Bits, what: &str| {
            let (want, other) = if bits == Bits::Seven { (&seven, &eight) } else { (&eight, &seven) };
            assert!(distance(got, want) * 10.0 < distance(got, other), "{m} rows {what}: not {bits:?}");
        };
        assert_took(&for_embedding(run), if relaxed { Bits::Seven } else { Bits::Eight }, "in for_embedding");
        assert_took(&run(), Bits::Eight, "outside");
        // wasm builds abort on a panic: the unwinding case is native's.
        if cfg!(panic = "unwind") {
            assert!(std::panic::catch_unwind(|| for_embedding(|| panic!("a failed pass"))).is_err());
            assert_took(&run(), Bits::Eight, "after a pass unwound");
        }
    }
}

/// Enough activation rows for the packed kernels (the relaxed module's
/// trial, x86's prepacked VNNI).
const PREPACK_ROWS_OR_MORE: usize = 131;

fn activations(m: usize, k: usize) -> Vec<f32> {
    (0..m * k).map(|i| ((i * 7919 % 1013) as f32 / 1013.0 - 0.5) * if i % 97 == 0 { 40.0 } else { 1.0 }).collect()
}

/// At the extremes of both operands (every weight −128 or 127, every
/// activation its quantization's largest or smallest) each kernel's
/// products, 16-bit pair sums included, neither saturate nor wrap.
#[test]
fn q8_0_kernels_are_exact_at_the_extremes() {
    let (n, k) = (9, 64);
    let mut w_bytes = random_matrix(GgmlType::Q8_0, n, k, 3);
    for (b, block) in w_bytes.chunks_exact_mut(Q8_0_BLOCK_BYTES).enumerate() {
        block[2..].fill(if b % 2 == 0 { 0x80 } else { 0x7f });
    }
    let w = QMatrix { kind: GgmlType::Q8_0, rows: n, cols: k, data: &w_bytes };
    for m in [1, 5, PREPACK_ROWS_OR_MORE] {
        let x: Vec<f32> = (0..m * k).map(|i| if (i / k) % 2 == 0 { 1.0 } else { -1.0 }).collect();
        for bits in [Bits::Eight, Bits::Seven] {
            q8_0_kernels_match_the_scalar_kernel_on(&w, &QuantizedRows::quantize_to(&x, k, bits), m);
        }
    }
}

/// Every kernel this CPU runs gives the scalar kernel's sums, at every
/// tile edge (rows and columns not multiples of the tile).
#[test]
fn q8_0_kernels_match_the_scalar_reference() {
    for (m, n, k) in [(1, 1, 32), (1, 9, 96), (3, 5, 64), (4, 4, 32), (5, 16, 64), (9, 7, 96), (70, 13, 384)] {
        let mut w_bytes = random_matrix(GgmlType::Q8_0, n, k, (m * 31 + n) as u64);
        // −128, which llama.cpp's quantizer never writes but a file may hold
        // (relaxed SIMD's 7-bit operand must never be the weight).
        for block in w_bytes.chunks_exact_mut(Q8_0_BLOCK_BYTES) {
            block[2 + block[3] as usize % 32] = 0x80;
        }
        let w = QMatrix { kind: GgmlType::Q8_0, rows: n, cols: k, data: &w_bytes };
        for bits in [Bits::Eight, Bits::Seven] {
            q8_0_kernels_match_the_scalar_kernel_on(&w, &QuantizedRows::quantize_to(&activations(m, k), k, bits), m);
        }
    }
}

/// [`q8_0_kernels_match_the_scalar_reference`] for one matrix and one
/// quantization of `m` activation rows (8 bits, or an embedding model's
/// 7 in the relaxed module).
fn q8_0_kernels_match_the_scalar_kernel_on(w: &QMatrix, x: &QuantizedRows, m: usize) {
    let (n, k) = (w.rows, w.cols);
    let mut expected = vec![0f32; m * n];
    scalar::q8_0_matmul(x, 0..m, w, &mut expected);
    // The whole matrix packed once (products of many rows).
    #[cfg(any(
        target_arch = "x86_64",
        all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd")
    ))]
    if let Some(packed) = pack_q8_0(w) {
        let mut got = vec![0f32; m * n];
        q8_0_packed_matmul(x, 0..m, &packed, &mut got);
        // Relaxed SIMD's sums are exact and scaled in the scalar order,
        // on either form of its dot product.
        #[cfg(target_arch = "wasm32")]
        {
            assert_eq!(got, expected, "packed {m}×{n}×{k}");
            let mut split = vec![0f32; m * n];
            wasm_relaxed::matmul_packed_split(x, 0..m, &packed, &mut split);
            assert_eq!(split, expected, "packed, split dot, {m}×{n}×{k}");
        }
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert!((g - e).abs() <= 1e-4 * e.abs().max(1.0), "packed {m}×{n}×{k} [{i}]: {g} vs {e}");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let mut kernels = vec![("neon", arm::neon_matmul as Q8Kernel)];
        let dotprod = std::arch::is_aarch64_feature_detected!("dotprod");
        // scripts/test-arm.sh runs these under an emulated CPU that has it.
        assert!(dotprod || std::env::var_os("QMD_EXPECT_DOTPROD").is_none(), "this CPU lacks dotprod");
        if dotprod {
            kernels.push(("dotprod", arm::dotprod_matmul as Q8Kernel));
        }
        for (name, kernel) in kernels {
            let mut got = vec![0f32; m * n];
            kernel(x, 0..m, w, &mut got);
            // Bit for bit: the same integer sums, scaled in the same order.
            assert_eq!(got, expected, "{name} {m}×{n}×{k}");
        }
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    for (name, kernel) in wasm_kernels(true) {
        let mut got = vec![0f32; m * n];
        kernel(x, 0..m, w, &mut got);
        assert_eq!(got, expected, "{name} {m}×{n}×{k}");
    }
    #[cfg(target_arch = "x86_64")]
    for (name, kernel) in [("vnni", x86::vnni_matmul as Q8Kernel), ("avx2", x86::avx2_matmul as Q8Kernel)] {
        let runs = match name {
            "vnni" => dispatch::Level::detected() >= dispatch::Level::Avx512Vnni,
            _ => dispatch::Level::detected() >= dispatch::Level::Avx2,
        };
        if !runs {
            continue;
        }
        let mut got = vec![0f32; m * n];
        kernel(x, 0..m, w, &mut got);
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert!((g - e).abs() <= 1e-4 * e.abs().max(1.0), "{name} {m}×{n}×{k} [{i}]: {g} vs {e}");
        }
    }
}

/// The Q8_0 product is the float product of the dequantized weights with
/// the activations as quantized to 8 bits; the float path (other types)
/// is the product with the activations as given.
#[test]
fn matmul_agrees_with_the_dequantized_product() {
    let (m, n, k) = (37, 11, 128);
    let w_bytes = random_matrix(GgmlType::Q8_0, n, k, 7);
    let w = QMatrix { kind: GgmlType::Q8_0, rows: n, cols: k, data: &w_bytes };
    let x = activations(m, k);
    let mut dense = vec![0f32; n * k];
    dequantize(GgmlType::Q8_0, &w_bytes, &mut dense);
    let bias: Vec<f32> = (0..n).map(|j| j as f32).collect();
    let product = |x: &[f32]| -> Vec<f32> {
        (0..m * n)
            .map(|i| {
                let (r, c) = (i / n, i % n);
                (0..k).map(|t| x[r * k + t] * dense[c * k + t]).sum::<f32>() + bias[c]
            })
            .collect()
    };
    let reference = product(&x);
    let rounded = QuantizedRows::quantize(&x, k);
    let x8: Vec<f32> = rounded.values.iter().enumerate().map(|(i, &q)| f32::from(q) * rounded.scales[i / 32]).collect();
    let reference8 = product(&x8);
    let mut quantized = vec![0f32; m * n];
    matmul(&x, &w, Some(&bias), &mut quantized);
    let f32_bytes: Vec<u8> = dense.iter().flat_map(|v| v.to_le_bytes()).collect();
    let float = QMatrix { kind: GgmlType::F32, rows: n, cols: k, data: &f32_bytes };
    let mut exact = vec![0f32; m * n];
    matmul(&x, &float, Some(&bias), &mut exact);
    for i in 0..m * n {
        assert!((exact[i] - reference[i]).abs() < 1e-3, "float path [{i}]: {} vs {}", exact[i], reference[i]);
        assert!((quantized[i] - reference8[i]).abs() < 1e-3, "q8 path [{i}]: {} vs {}", quantized[i], reference8[i]);
    }
}

/// Products sharing one quantization of their inputs equal separate ones,
/// Q8_0, Q4_1, K-quant and float weights mixed: for several rows, and for
/// one (a decoded token, whose products share one parallel step), with
/// more weight rows than a task takes.
#[test]
fn matmul_each_equals_separate_products() {
    let k = 256;
    let q8 = random_matrix(GgmlType::Q8_0, 7, k, 3);
    let q4 = random_matrix(GgmlType::Q4_1, 150, k, 4);
    let q4k = random_matrix(GgmlType::Q4_K, 70, k, 5);
    let floats: Vec<u8> = (0..5 * k).flat_map(|i| ((i % 17) as f32 / 17.0 - 0.5).to_le_bytes()).collect();
    let a = QMatrix { kind: GgmlType::Q8_0, rows: 7, cols: k, data: &q8 };
    let b = QMatrix { kind: GgmlType::F32, rows: 5, cols: k, data: &floats };
    let c = QMatrix { kind: GgmlType::Q4_1, rows: 150, cols: k, data: &q4 };
    let d = QMatrix { kind: GgmlType::Q4_K, rows: 70, cols: k, data: &q4k };
    for m in [13, 1] {
        let x = activations(m, k);
        let [ya, yb, yc, yd] = matmul_each(&x, [&a, &b, &c, &d]);
        for (w, got) in [(&a, ya), (&b, yb), (&c, yc), (&d, yd)] {
            let mut expected = vec![0f32; m * w.rows];
            matmul(&x, w, None, &mut expected);
            assert_eq!(got, expected, "{} weights, {m} rows", w.kind);
            assert!(got.iter().any(|&y| y != 0.0), "{} weights, {m} rows: all zero", w.kind);
        }
    }
}

/// The SIMD 4-bit kernels give the portable kernel's sums, at every tile
/// edge.
#[test]
fn q4_kernels_match_the_scalar_reference() {
    let kernel = q4_kernel();
    for (m, n, k) in [(1, 1, 32), (1, 9, 96), (3, 5, 64), (4, 4, 32), (5, 16, 64), (9, 7, 96), (70, 13, 384)] {
        let x = QuantizedRows::quantize(&activations(m, k), k);
        for kind in [GgmlType::Q4_0, GgmlType::Q4_1] {
            let bytes = random_matrix(kind, n, k, (m * 7 + n) as u64);
            let w = QMatrix { kind, rows: n, cols: k, data: &bytes };
            let mut expected = vec![0f32; m * n];
            scalar::q4_matmul(&x, 0..m, &w, &mut expected);
            let mut got = vec![0f32; m * n];
            kernel(&x, 0..m, &w, &mut got);
            // AArch64's kernels scale in the scalar kernel's order.
            #[cfg(target_arch = "aarch64")]
            each_arm_kernel(
                [("neon", arm::q4_neon_matmul as Q8Kernel), ("dotprod", arm::q4_dotprod_matmul)],
                |name, kernel| {
                    let mut exact = vec![0f32; m * n];
                    kernel(&x, 0..m, &w, &mut exact);
                    assert_eq!(exact, expected, "{name} {kind} {m}×{n}×{k}");
                },
            );
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            for (name, kernel) in wasm_kernels(false) {
                let mut exact = vec![0f32; m * n];
                kernel(&x, 0..m, &w, &mut exact);
                assert_eq!(exact, expected, "{name} {kind} {m}×{n}×{k}");
            }
            assert_same_sums(&got, &expected, &format!("{kind} {m}×{n}×{k}"));
        }
    }
}

/// The 4-bit integer kernels give the float product of the dequantized
/// weights with the activations as quantized to 8 bits.
#[test]
fn q4_kernels_match_the_dequantized_product() {
    let (m, n, k) = (5, 9, 160);
    let x = activations(m, k);
    let rounded = QuantizedRows::quantize(&x, k);
    let x8: Vec<f64> =
        rounded.values.iter().enumerate().map(|(i, &q)| f64::from(q) * f64::from(rounded.scales[i / 32])).collect();
    for kind in [GgmlType::Q4_0, GgmlType::Q4_1] {
        let bytes = random_matrix(kind, n, k, 11);
        let w = QMatrix { kind, rows: n, cols: k, data: &bytes };
        let mut dense = vec![0f32; n * k];
        dequantize(kind, &bytes, &mut dense);
        let mut got = vec![0f32; m * n];
        matmul(&x, &w, None, &mut got);
        for (i, g) in got.iter().enumerate() {
            let (r, c) = (i / n, i % n);
            let terms = (0..k).map(|t| x8[r * k + t] * f64::from(dense[c * k + t]));
            let scale: f64 = terms.clone().map(f64::abs).sum();
            let expected: f64 = terms.sum();
            assert!((f64::from(*g) - expected).abs() <= 2e-3 * scale.max(1e-3), "{kind} [{i}]: {g} vs {expected}");
        }
    }
}

/// Whether the work is split by activation rows (many rows) or by weight
/// rows (few, as when decoding), every output lands in its place: the
/// product equals the f64 product of the dequantized weights with the
/// activations as the weights' kernel quantizes them.
#[test]
fn products_split_either_way_equal_the_dequantized_product() {
    let (n, k) = (100, 256);
    for kind in [GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K] {
        let bytes = if kind == GgmlType::Q8_0 {
            random_matrix(GgmlType::Q8_0, n, k, 17)
        } else {
            random_matrix(kind, n, k, 17)
        };
        let w = QMatrix { kind, rows: n, cols: k, data: &bytes };
        let mut dense = vec![0f32; n * k];
        dequantize(kind, &bytes, &mut dense);
        for m in [1, 3, 70] {
            let x = activations(m, k);
            let rounded: Vec<f64> = if kind == GgmlType::Q8_0 {
                let q = QuantizedRows::quantize(&x, k);
                q.values.iter().enumerate().map(|(i, &v)| f64::from(v) * f64::from(q.scales[i / 32])).collect()
            } else {
                let q = Q8KRows::quantize(&x, k);
                (0..m * k)
                    .map(|i| f64::from(q.row(i / k).values[i % k]) * f64::from(q.row(i / k).scales[i % k / 256]))
                    .collect()
            };
            let mut got = vec![0f32; m * n];
            matmul(&x, &w, None, &mut got);
            for (i, g) in got.iter().enumerate() {
                let (r, c) = (i / n, i % n);
                let terms = (0..k).map(|t| rounded[r * k + t] * f64::from(dense[c * k + t]));
                let scale: f64 = terms.clone().map(f64::abs).sum();
                let expected: f64 = terms.sum();
                assert!((f64::from(*g) - expected).abs() <= 1e-5 * scale, "{kind} m={m} [{i}]: {g} vs {expected}");
            }
        }
    }
}

/// An attention head's two products ([`float::HeadProducts`]) against
/// their definition, in f64, on every shape of tile and remainder the
/// fused kernels cut (rows and key spans that are and are not multiples of
/// their tiles, spans that start inside the keys), in an embedding pass
/// (the relaxed module's fused multiply-add) and outside one (gemm
/// everywhere). Only the relaxed module fuses, and only in the pass.
#[test]
fn attention_products_follow_their_definition_in_and_out_of_embedding_passes() {
    let mut next = xorshift(11);
    let mut value = move || ((next() % 2001) as f32 - 1000.0) / 1000.0;
    let relaxed = cfg!(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"));
    for head_dim in [8, 12, 32] {
        assert_eq!(for_embedding(|| fused_attention(head_dim)), relaxed && head_dim % 8 == 0, "{head_dim} wide");
        assert!(!fused_attention(head_dim), "outside an embedding pass");
        let (len, stride) = (37, head_dim + 3);
        let k: Vec<f32> = (0..len * stride).map(|_| value()).collect();
        let v: Vec<f32> = (0..len * stride).map(|_| value()).collect();
        for rows in [1, 3, 4, 9] {
            let q: Vec<f32> = (0..rows * stride).map(|_| value()).collect();
            // 3..3: an empty sum is zeros, whichever product runs.
            for span in [0..len, 0..1, 2..7, 5..33, 30..37, 3..3] {
                let width = span.len();
                let p: Vec<f32> = (0..rows * width).map(|_| value()).collect();
                let at = |m: &[f32], row: usize, d: usize| f64::from(m[row * stride + d]);
                for embedding in [false, true] {
                    let run = || {
                        let products = float::HeadProducts::new(&k, stride, len, head_dim);
                        let mut scores = vec![f32::NAN; rows * width];
                        products.scores(&q, (stride, rows), span.clone(), 0.5, &mut scores);
                        let mut out = vec![f32::NAN; rows * stride];
                        products.weighted_values(
                            &p,
                            (rows, width),
                            (&v[span.start * stride..], stride),
                            (&mut out, stride),
                        );
                        (scores, out)
                    };
                    let (scores, out) = if embedding { for_embedding(run) } else { run() };
                    for i in 0..rows {
                        for (j, key) in span.clone().enumerate() {
                            let want = 0.5 * (0..head_dim).map(|d| at(&q, i, d) * at(&k, key, d)).sum::<f64>();
                            let got = f64::from(scores[i * width + j]);
                            assert!(
                                (got - want).abs() < 1e-5,
                                "{head_dim} wide, {rows} rows, {span:?}: score {got} vs {want}"
                            );
                        }
                        for d in 0..head_dim {
                            let want: f64 =
                                (0..width).map(|j| f64::from(p[i * width + j]) * at(&v, span.start + j, d)).sum();
                            let got = f64::from(out[i * stride + d]);
                            assert!(
                                (got - want).abs() < 1e-5,
                                "{head_dim} wide, {rows} rows, {span:?}: value {got} vs {want}"
                            );
                        }
                        assert!(
                            out[i * stride + head_dim..(i + 1) * stride].iter().all(|x| x.is_nan()),
                            "wrote past the head"
                        );
                    }
                }
            }
        }
    }
}

/// Softmax and GELU against their definitions in f64, in an embedding
/// pass (the relaxed module's fused multiply-add) and outside one, at
/// lengths around the four- and eight-lane bodies, over the exponential's
/// whole range and past its bounds (masked scores, GELU's saturation),
/// and with GELU's factors (the gated form) and without.
#[test]
fn softmax_and_gelu_follow_their_definition_in_and_out_of_embedding_passes() {
    use crate::arch::ops::{gelu, gelu_gate};
    use crate::kernels::math::GELU_TANH;
    use crate::kernels::softmax;
    let relaxed = cfg!(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"));
    assert_eq!(for_embedding(fused_element_wise), relaxed);
    assert!(!fused_element_wise(), "outside an embedding pass");
    let mut next = xorshift(5);
    let mut value = move |range: f32| ((next() % 20_001) as f32 - 10_000.0) / 10_000.0 * range;
    for embedding in [false, true] {
        let pass = |f: &mut dyn FnMut()| if embedding { for_embedding(f) } else { f() };
        for len in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 200] {
            for range in [1.0, 30.0, 90.0] {
                let mut row: Vec<f32> = (0..len).map(|_| value(range)).collect();
                if len > 2 {
                    row[1] = -1e9; // a masked score
                }
                let top = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
                let total: f64 = row.iter().map(|&x| (f64::from(x) - top).exp()).sum();
                let mut ours = row.clone();
                pass(&mut || softmax(&mut ours));
                for (x, y) in row.iter().zip(&ours) {
                    let want = (f64::from(*x) - top).exp() / total;
                    assert!((f64::from(*y) - want).abs() <= 1e-6, "softmax, {len} long, ±{range}: {y} vs {want}");
                }
            }
            let x: Vec<f32> = (0..len).map(|i| if i == 2 { -200.0 } else { value(12.0) }).collect();
            let up: Vec<f32> = (0..len).map(|_| value(2.0)).collect();
            let (mut plain, mut gated) = (x.clone(), x.clone());
            pass(&mut || {
                gelu(&mut plain);
                gelu_gate(&mut gated, &up);
            });
            for (i, &v) in x.iter().enumerate() {
                let (v64, (scale, cube)) = (f64::from(v), GELU_TANH);
                let y = f64::from(scale) * (v64 + f64::from(cube) * v64.powi(3));
                // 0.5·v·(1 + tanh y) as v·e^{2y}/(e^{2y} + 1): in f64 too the
                // tanh form cancels to 0 for v ≲ −9.
                let want = v64 / (1.0 + (-2.0 * y).exp());
                // Relative to the value, with e^{2y}'s error from 2y's
                // rounding (|2y|·ε), but for e^{2y} past exp's domain
                // (y < −43.5), where both sides are under 1e-37.
                let bound = (16.0 + 8.0 * y.abs()) * f64::from(f32::EPSILON);
                let close = |got: f32, want: f64| (f64::from(got) - want).abs() <= bound * want.abs() + 1e-30;
                assert!(close(plain[i], want), "gelu({v}) = {} vs {want}, {len} long", plain[i]);
                assert!(close(gated[i], want * f64::from(up[i])), "gated gelu({v}) = {} vs {want}·{}", gated[i], up[i]);
            }
        }
    }
}
