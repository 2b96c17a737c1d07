//! The host stack's ceiling for one TCP stream on a path with no hardware (loopback, veth,
//! bridge): how fast the CPU can copy the bytes through the kernel.
//!
//! Basis. A TCP stream between two sockets on one host copies each byte twice: `send()` copies
//! it from the sender's user buffer into kernel socket buffers (on the sender's core), and
//! `recv()` copies it from the kernel into the receiver's user buffer (on the receiver's core).
//! Nothing else moves the payload: loopback and veth hand the same socket buffers over without a
//! copy. With two or more cores the scheduler runs the sender and the receiver on different
//! cores, so each core copies each byte once and the two copies proceed in parallel: the stream
//! can go no faster than one core's copy rate. With one core both copies share it: half that.
//!
//! This is an upper bound, never an estimate of what is reached: the same cores also segment,
//! checksum (or not, on loopback), acknowledge and wake each other up, and the copies do not
//! always hit a warm cache. A measured stream above the bound means the copy rate fed in was
//! measured too low (a busy moment), not that the bound can be beaten.

use linerate_units::{fmt_round, gb_per_s_to_gbps};
use serde::{Deserialize, Serialize};

/// What the host-stack ceiling is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostStackInput {
    /// One core's peak memcpy rate on cache-resident buffers, GB/s (10^9 byte/s).
    pub copy_gb_per_s: f64,
    /// CPUs the two ends of the stream may run on.
    pub cores: usize,
}

/// The host stack's upper bound for one TCP stream, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostStackCeiling {
    /// Gb/s (10^9 bit/s) of TCP payload, at most.
    pub gbps: f64,
    /// Memory copies each core does per byte of payload: 1 with the ends on two cores, 2 on one.
    pub copies_per_core: u32,
    /// The basis in words with its figures, without the bound ("one memory copy per byte on
    /// each of 2 cores at 7.8 GB/s").
    pub basis: String,
    /// One line: the basis, the bound, and that it is an upper bound.
    pub explain: String,
}

/// The ceiling of one TCP stream through the host stack. None for a copy rate that is not
/// finite and positive, or for no cores.
pub fn host_stack_ceiling(i: &HostStackInput) -> Option<HostStackCeiling> {
    if !(i.copy_gb_per_s.is_finite() && i.copy_gb_per_s > 0.0) || i.cores == 0 {
        return None;
    }
    // Two copies per byte in all (user → kernel on the sender, kernel → user on the receiver);
    // with two cores each takes one of them, with one core it takes both.
    let copies_per_core: u32 = if i.cores >= 2 { 1 } else { 2 };
    let gbps = gb_per_s_to_gbps(i.copy_gb_per_s) / f64::from(copies_per_core);
    let rate = fmt_round(i.copy_gb_per_s, 1);
    let basis = if copies_per_core == 1 {
        format!("one memory copy per byte on each of 2 cores at {rate} GB/s")
    } else {
        format!("two memory copies per byte on 1 core at {rate} GB/s")
    };
    let explain = format!(
        "{basis}: at most {} Gb/s (an upper bound: the same cores also segment, acknowledge and wake the other end)",
        fmt_round(gbps, 1)
    );
    Some(HostStackCeiling {
        gbps,
        copies_per_core,
        basis,
        explain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(copy: f64, cores: usize) -> Option<HostStackCeiling> {
        host_stack_ceiling(&HostStackInput {
            copy_gb_per_s: copy,
            cores,
        })
    }

    #[test]
    fn two_cores_one_copy_each() {
        let c = bound(7.8, 2).unwrap();
        assert!((c.gbps - 62.4).abs() < 1e-9, "{}", c.gbps);
        assert_eq!(c.copies_per_core, 1);
        assert!(
            c.explain.starts_with(
                "one memory copy per byte on each of 2 cores at 7.8 GB/s: at most 62.4 Gb/s"
            ),
            "{}",
            c.explain
        );
        assert!(c.explain.contains("upper bound"), "{}", c.explain);
        // More cores do not help one stream: it has only two copies to spread.
        assert_eq!(bound(7.8, 64).unwrap().gbps, c.gbps);
    }

    #[test]
    fn one_core_does_both_copies() {
        let c = bound(7.8, 1).unwrap();
        assert!((c.gbps - 31.2).abs() < 1e-9, "{}", c.gbps);
        assert_eq!(c.copies_per_core, 2);
        assert!(
            c.explain
                .starts_with("two memory copies per byte on 1 core at 7.8 GB/s: at most 31.2 Gb/s"),
            "{}",
            c.explain
        );
        assert_eq!(c.gbps * 2.0, bound(7.8, 2).unwrap().gbps);
    }

    #[test]
    fn scales_with_the_copy_rate() {
        let slow = bound(5.0, 4).unwrap().gbps;
        let fast = bound(10.0, 4).unwrap().gbps;
        assert!((fast - 2.0 * slow).abs() < 1e-9);
    }

    #[test]
    fn no_bound_from_bad_input() {
        for copy in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(bound(copy, 2).is_none(), "{copy}");
        }
        assert!(bound(7.8, 0).is_none());
    }
}
