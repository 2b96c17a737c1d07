//! The TCP socket buffers a path needs: the one sizing rule that `doctor` quotes in
//! `tcp.buffers_small` and `linerate setup sysctl` writes, so the two always agree. Pure.

/// The file `linerate setup sysctl --apply` writes the buffers to (and doctor's fix names).
pub const SYSCTL_FILE: &str = "/etc/sysctl.d/90-linerate.conf";

/// perfSONAR's `configure_sysctl` tiers (toolkit/perfsonar-toolkit/scripts/configure_sysctl):
/// (minimum link Gb/s, `net.core.{r,w}mem_max`, maximum of `tcp_{r,w}mem`).
const TIERS: [(f64, u64, u64); 3] = [
    (40.0, 536_870_912, 268_435_456),
    (10.0, 268_435_456, 134_217_728),
    (0.0, 67_108_864, 33_554_432),
];
/// The min and default of perfSONAR's `tcp_rmem` / `tcp_wmem`.
const TCP_RMEM_LOW: [u64; 2] = [4096, 87380];
const TCP_WMEM_LOW: [u64; 2] = [4096, 65536];

/// The socket buffer limits for a rate and round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpBufferSizes {
    /// The bandwidth-delay product, bytes.
    pub bdp: u64,
    /// `net.core.rmem_max` and `net.core.wmem_max`.
    pub core_max: u64,
    /// `net.ipv4.tcp_rmem` (min, default, max).
    pub tcp_rmem: [u64; 3],
    /// `net.ipv4.tcp_wmem` (min, default, max).
    pub tcp_wmem: [u64; 3],
}

/// The window send and receive buffer limits (`tcp_wmem`'s and `tcp_rmem`'s maximum, bytes)
/// allow one stream: Linux gives about half of the receive buffer to the window;
/// unacknowledged data stays in the send buffer.
pub fn window_of(wmem: u64, rmem: u64) -> u64 {
    wmem.min(rmem / 2)
}

impl TcpBufferSizes {
    /// Buffers for `gbps` (10^9 bit/s) over a round trip of `rtt_ms` milliseconds: twice the
    /// bandwidth-delay product rounded up to a power of two (the kernel keeps part of each
    /// buffer for its own overhead, `tcp_adv_win_scale`: twice the BDP lets the window reach
    /// the BDP), with perfSONAR's tier for the rate as the floor.
    pub fn for_path(gbps: f64, rtt_ms: f64) -> Self {
        let gbps = if gbps.is_finite() { gbps.max(0.0) } else { 0.0 };
        let rtt_ms = if rtt_ms.is_finite() {
            rtt_ms.max(0.0)
        } else {
            0.0
        };
        let bdp = (gbps * 1e9 / 8.0 * rtt_ms / 1000.0).ceil() as u64;
        let need = (2 * bdp).max(1).next_power_of_two();
        let (_, core_tier, tcp_tier) = TIERS
            .iter()
            .find(|(min, _, _)| gbps >= *min)
            .copied()
            .unwrap_or(TIERS[2]);
        let tcp_max = tcp_tier.max(need);
        Self {
            bdp,
            core_max: core_tier.max(tcp_max),
            tcp_rmem: [TCP_RMEM_LOW[0], TCP_RMEM_LOW[1], tcp_max],
            tcp_wmem: [TCP_WMEM_LOW[0], TCP_WMEM_LOW[1], tcp_max],
        }
    }

    /// The sysctl keys and their values, in the order `setup` writes them.
    pub fn sysctls(&self) -> [(&'static str, Vec<u64>); 4] {
        [
            ("net.core.rmem_max", vec![self.core_max]),
            ("net.core.wmem_max", vec![self.core_max]),
            ("net.ipv4.tcp_rmem", self.tcp_rmem.to_vec()),
            ("net.ipv4.tcp_wmem", self.tcp_wmem.to_vec()),
        ]
    }

    /// The window these limits allow one stream (Linux gives about half of the receive buffer
    /// to the window; unacknowledged data stays in the send buffer), bytes.
    pub fn window(&self) -> u64 {
        window_of(self.tcp_wmem[2], self.tcp_rmem[2])
    }

    /// `sysctl -w` of every key, for a fix's words.
    pub fn sysctl_w(&self) -> String {
        let words: Vec<String> = self
            .sysctls()
            .iter()
            .map(|(k, v)| match v.as_slice() {
                [one] => format!("{k}={one}"),
                many => format!(
                    "{k}='{}'",
                    many.iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            })
            .collect();
        format!("sysctl -w {}", words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_and_bdp() {
        // 100 Gb/s at 10 ms: BDP 125 MB, twice that rounds up to 256 MiB = the ≥40G tier's tcp max.
        let b = TcpBufferSizes::for_path(100.0, 10.0);
        assert_eq!(b.bdp, 125_000_000);
        assert_eq!(b.tcp_rmem, [4096, 87380, 268_435_456]);
        assert_eq!(b.core_max, 536_870_912);
        // 100 Gb/s at 50 ms: twice the BDP (1.25 GB) is above every tier.
        assert_eq!(
            TcpBufferSizes::for_path(100.0, 50.0).tcp_rmem[2],
            2_147_483_648
        );
        // 1 Gb/s on a LAN: the base tier.
        let b = TcpBufferSizes::for_path(1.0, 0.1);
        assert_eq!(b.core_max, 67_108_864);
        assert_eq!(b.tcp_wmem, [4096, 65536, 33_554_432]);
        assert_eq!(b.window(), 16_777_216);
    }

    #[test]
    fn nonsense_in_gives_the_floor() {
        let b = TcpBufferSizes::for_path(f64::NAN, -1.0);
        assert_eq!(b.bdp, 0);
        assert_eq!(b.tcp_rmem[2], 33_554_432);
        assert_eq!(
            b.sysctl_w(),
            "sysctl -w net.core.rmem_max=67108864 net.core.wmem_max=67108864 net.ipv4.tcp_rmem='4096 87380 33554432' net.ipv4.tcp_wmem='4096 65536 33554432'"
        );
    }
}
