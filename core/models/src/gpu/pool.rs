//! Activation buffers kept for reuse: allocating GPU memory for every
//! operation's output (hundreds of megabytes each, hundreds a pass) took
//! longer than the kernels.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use super::wgpu;

/// Free activation buffers by size, and their bytes together.
#[derive(Default)]
pub(super) struct Pool {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
}

/// The most bytes of free buffers a pool keeps; more are freed.
const POOL_BYTES: u64 = 1 << 30;

impl Pool {
    pub(super) fn take(&mut self, size: u64) -> Option<wgpu::Buffer> {
        let buffer = self.free.get_mut(&size)?.pop()?;
        self.bytes -= size;
        Some(buffer)
    }

    fn keep(&mut self, buffer: wgpu::Buffer) {
        let size = buffer.size();
        if self.bytes + size <= POOL_BYTES {
            self.bytes += size;
            self.free.entry(size).or_default().push(buffer);
        }
    }
}

/// `bytes` rounded up to its size class: a quarter of a power of two
/// (at least 4 KiB), so a pass of another length still finds buffers of
/// its sizes, at most 25 % larger than asked for.
pub(super) fn size_class(bytes: u64) -> u64 {
    if bytes <= 4096 {
        return 4096;
    }
    let step = (1u64 << (63 - bytes.leading_zeros())) / 4;
    bytes.next_multiple_of(step)
}

/// An activation buffer that goes back to its context's pool when dropped
/// (allocating GPU memory for every operation's output, hundreds of
/// megabytes each and hundreds a pass, took longer than the kernels).
/// Reusing it is safe: wgpu orders each use after the commands recorded
/// before it.
pub struct PooledBuffer {
    buffer: Option<wgpu::Buffer>,
    pool: Arc<Mutex<Pool>>,
}

impl Deref for PooledBuffer {
    type Target = wgpu::Buffer;

    fn deref(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("a pooled buffer is held until dropped")
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            self.pool.lock().unwrap_or_else(|p| p.into_inner()).keep(buffer);
        }
    }
}

impl PooledBuffer {
    /// `buffer`, to go back to `pool` when dropped.
    pub(super) fn new(buffer: wgpu::Buffer, pool: Arc<Mutex<Pool>>) -> PooledBuffer {
        PooledBuffer { buffer: Some(buffer), pool }
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_are_quarter_powers_of_two_at_most_a_quarter_larger() {
        assert_eq!(size_class(1), 4096);
        assert_eq!(size_class(4097), 5120);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(size_class((1 << 20) + 1), (1 << 20) + (1 << 18));
        for bytes in [5_000u64, 123_456, 50_331_648, 201_326_593, 3_000_000_000] {
            let class = size_class(bytes);
            assert!(class >= bytes && class as f64 <= bytes as f64 * 1.25, "{bytes} -> {class}");
        }
    }
}
