//! Memory bandwidth: copy, read and write over buffers far larger than the caches.
//!
//! Copy is `copy_from_slice` (the C library's memcpy); read sums 64-bit words;
//! write is `fill` (memset). Bytes counted are those the program touches:
//! a copy of N bytes counts N (as `mbw` and a C memcpy loop report it).

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemOp {
    Copy,
    Read,
    Write,
}

impl MemOp {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Copy => "mem_copy",
            Self::Read => "mem_read",
            Self::Write => "mem_write",
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemResult {
    pub op: MemOp,
    pub threads: usize,
    pub buffer_bytes: usize,
    pub bytes: u64,
    pub seconds: f64,
}

impl MemResult {
    /// 10^9 bytes per second.
    pub fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-12) / 1e9
    }
}

fn one_thread(op: MemOp, len: usize, duration: Duration, ready: &Barrier) -> (u64, f64) {
    let mut src = vec![1u8; len];
    let mut dst = vec![0u8; len];
    // Touch every page before timing.
    dst.fill(2);
    // Every thread starts timing when all have their buffers: otherwise the first ones copy
    // alone while the last still fault their pages in, and the sum over-counts what the
    // threads move together.
    ready.wait();
    let mut bytes = 0u64;
    let start = Instant::now();
    let mut acc = 0u64;
    // Bounded by time and by count (a stalled clock cannot loop forever).
    for round in 0..1_000_000u32 {
        match op {
            MemOp::Copy => dst.copy_from_slice(&src),
            MemOp::Write => dst.fill(round as u8),
            MemOp::Read => acc = acc.wrapping_add(words_sum(&src)),
        }
        black_box(&mut dst);
        black_box(&mut src);
        bytes += len as u64;
        if start.elapsed() >= duration {
            break;
        }
    }
    black_box(acc);
    (bytes, start.elapsed().as_secs_f64())
}

/// Sum of the buffer read as 64-bit words (the compiler vectorises this).
fn words_sum(b: &[u8]) -> u64 {
    b.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .fold(0u64, u64::wrapping_add)
}

/// Measure `op` on `threads` threads at once, each with its own `buffer_bytes` buffers.
pub fn measure(op: MemOp, threads: usize, buffer_bytes: usize, duration: Duration) -> MemResult {
    measure_pinned(op, threads, &[], buffer_bytes, duration)
}

/// As [`measure`], each thread pinned to one of `cpus` (round robin) before it allocates,
/// so its buffers are on that CPU's NUMA node (first touch).
pub fn measure_pinned(
    op: MemOp,
    threads: usize,
    cpus: &[usize],
    buffer_bytes: usize,
    duration: Duration,
) -> MemResult {
    let threads = threads.max(1);
    let ready = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
            let ready = Arc::clone(&ready);
            std::thread::spawn(move || {
                if let Some(c) = cpu {
                    let _ = crate::sys::pin_to_cpu(c);
                }
                one_thread(op, buffer_bytes, duration, &ready)
            })
        })
        .collect();
    let mut bytes = 0;
    let mut secs = 0.0_f64;
    for h in handles {
        if let Ok((b, s)) = h.join() {
            bytes += b;
            secs = secs.max(s);
        }
    }
    MemResult {
        op,
        threads,
        buffer_bytes,
        bytes,
        seconds: secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_something_plausible() {
        for op in [MemOp::Copy, MemOp::Read, MemOp::Write] {
            let r = measure(op, 1, 8 << 20, Duration::from_millis(50));
            assert!(r.bytes >= 8 << 20, "{op:?}");
            // Functional facts only: a rate exists and is finite. A floor on it failed in a
            // debug build on a loaded host (the read loop unoptimised: 50 MB/s), and speed is
            // for bench/mem_compare.sh to measure.
            assert!(
                r.seconds > 0.0 && r.gb_per_s().is_finite() && r.gb_per_s() > 0.0,
                "{r:?}"
            );
        }
    }

    #[test]
    fn every_thread_of_an_all_thread_run_counts() {
        let r = measure(MemOp::Copy, 3, 1 << 20, Duration::from_millis(30));
        assert_eq!(r.threads, 3);
        // Each thread copies its buffer at least once after the common start.
        assert!(r.bytes >= 3 << 20, "{r:?}");
        assert!(r.seconds > 0.0);
    }
}
