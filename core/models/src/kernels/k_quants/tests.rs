use super::*;
use crate::gguf::{GgmlType, dequantize};
#[cfg(target_arch = "aarch64")]
use crate::kernels::tests::each_arm_kernel;
use crate::kernels::tests::{assert_same_sums, random_matrix};

const KINDS: [GgmlType; 3] = [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K];

fn activations(m: usize, k: usize) -> Vec<f32> {
    (0..m * k).map(|i| ((i * 7919 % 1013) as f32 / 1013.0 - 0.5) * if i % 97 == 0 { 30.0 } else { 1.0 }).collect()
}

/// The scalar kernel gives the f64 product of ggml's dequantized weights
/// with the activations as quantized to Q8_K.
#[test]
fn scalar_kernel_is_the_dequantized_product() {
    let (m, n, k) = (3, 5, 512);
    let x = Q8KRows::quantize(&activations(m, k), k);
    for kind in KINDS {
        let bytes = random_matrix(kind, n, k, 5);
        let w = QMatrix { kind, rows: n, cols: k, data: &bytes };
        let mut dense = vec![0f32; n * k];
        dequantize(kind, &bytes, &mut dense);
        let mut got = vec![0f32; m * n];
        scalar::matmul(&x, 0..m, &w, &mut got);
        for (i, g) in got.iter().enumerate() {
            let (r, c) = (i / n, i % n);
            let row = x.row(r);
            let terms = (0..k).map(|t| {
                let xv = f64::from(row.values[t]) * f64::from(row.scales[t / 256]);
                xv * f64::from(dense[c * k + t])
            });
            let scale: f64 = terms.clone().map(f64::abs).sum();
            let expected: f64 = terms.sum();
            assert!((f64::from(*g) - expected).abs() <= 1e-5 * scale, "{kind} [{i}]: {g} vs {expected}");
        }
    }
}

/// Every kernel this CPU runs gives the scalar kernel's sums, at every
/// tile edge.
#[test]
fn kernels_match_the_scalar_reference() {
    for (m, n, k) in [(1, 1, 256), (3, 7, 512), (4, 2, 256), (9, 5, 768), (15, 3, 512), (6, 37, 512), (5, 16, 256)] {
        let x = Q8KRows::quantize(&activations(m, k), k);
        for kind in KINDS {
            let bytes = random_matrix(kind, n, k, (m * 13 + n) as u64);
            let w = QMatrix { kind, rows: n, cols: k, data: &bytes };
            let mut expected = vec![0f32; m * n];
            scalar::matmul(&x, 0..m, &w, &mut expected);
            let mut got = vec![0f32; m * n];
            kernel()(&x, 0..m, &w, &mut got);
            // AArch64's kernels scale in the scalar kernel's order.
            #[cfg(target_arch = "aarch64")]
            each_arm_kernel(
                [("neon", arm::neon_matmul as Kernel), ("dotprod", arm::dotprod_matmul)],
                |name, kernel| {
                    let mut exact = vec![0f32; m * n];
                    kernel(&x, 0..m, &w, &mut exact);
                    assert_eq!(exact, expected, "{name} {kind} {m}×{n}×{k}");
                },
            );
            // The browser's kernels (simd128, and relaxed SIMD in its
            // build) scale in the scalar kernel's order.
            #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
            {
                #[allow(unused_mut)] // one kernel without the relaxed-simd feature
                let mut kernels = vec![("simd128", wasm::matmul as Kernel)];
                #[cfg(feature = "relaxed-simd")]
                kernels.push(("relaxed", wasm_relaxed::matmul));
                for (name, kernel) in kernels {
                    let mut exact = vec![0f32; m * n];
                    kernel(&x, 0..m, &w, &mut exact);
                    assert_eq!(exact, expected, "{name} {kind} {m}×{n}×{k}");
                }
            }
            assert_same_sums(&got, &expected, &format!("{kind} {m}×{n}×{k}"));
            // A task's rows start anywhere: rows 1.. of the same product.
            if m > 1 {
                let mut tail = vec![0f32; (m - 1) * n];
                kernel()(&x, 1..m, &w, &mut tail);
                // Fewer rows than a panel pass take x86's row kernel, whose
                // floats add in another order.
                #[cfg(target_arch = "x86_64")]
                if m - 1 < x86_panel::RM {
                    assert_same_sums(&tail, &got[n..], &format!("{kind} {m}×{n}×{k} from row 1"));
                    continue;
                }
                assert_eq!(tail, got[n..], "{kind} {m}×{n}×{k} from row 1");
            }
        }
    }
}
