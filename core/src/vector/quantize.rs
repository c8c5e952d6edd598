//! Symmetric int8 quantisation: each vector keeps its own scale
//! (`max |x| / 127`), so a dot product of codes times both scales
//! approximates the f32 dot product closely enough to pick candidates,
//! which are then rescored exactly.

pub fn quantize(vector: &[f32]) -> (Vec<i8>, f32) {
    let max = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; vector.len()], 0.0);
    }
    let scale = max / 127.0;
    let codes = vector.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect();
    (codes, scale)
}

/// Integer dot product; written so the compiler vectorises it (i8 → i32
/// widening multiply-add), which is what makes the exact scan fast.
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantised_dot_is_close_to_exact() {
        let a: Vec<f32> = (0..384).map(|i| ((i * 37 % 101) as f32 - 50.0) / 400.0).collect();
        let b: Vec<f32> = (0..384).map(|i| ((i * 53 % 89) as f32 - 44.0) / 300.0).collect();
        let ((qa, sa), (qb, sb)) = (quantize(&a), quantize(&b));
        let approx = dot_i8(&qa, &qb) as f32 * sa * sb;
        let exact = dot_f32(&a, &b);
        assert!((approx - exact).abs() < 0.01 * exact.abs().max(0.1), "{approx} vs {exact}");
        assert_eq!(quantize(&[0.0, 0.0]), (vec![0, 0], 0.0));
    }
}
