//! How wide each counter is, and so the value at which it stops counting.
//!
//! The InfiniBand PMA counters (`counters/`) are 4, 8, 16 or 32 bits wide and **saturate** at
//! all-ones instead of wrapping (Shanley, *InfiniBand Network Architecture* ch. 35; widths from
//! the kernel's `PORT_PMA_ATTR` table, see `docs/soak.md`): 65535, 255 or 15 means "at least
//! this many", and nothing after that moment is visible until someone clears the counter.
//!
//! The data and packet counters (`port_xmit_data`, `port_rcv_data`, `port_xmit_packets`,
//! `port_rcv_packets`) are 32 bits in PortCounters and 64 bits in PortCountersExtended, which
//! the kernel uses when the port's ClassPortInfo advertises it. sysfs does not say which one
//! it read, so the width is decided from the values: a value above 2^32−1 proves 64 bits. A
//! value of exactly 2^32−1 is ambiguous (a pegged 32-bit counter, or a 64-bit one caught at
//! that value): the tracker calls it saturated, and takes the saturation back if a later value
//! is larger (then it was a 64-bit counter and the delta is exact).
//!
//! mlx5's `link_down_events_phy` is the one PPCNT counter narrower than 64 bits (32: the
//! PRM's phys-layer `link_down_events`, read with `MLX5E_READ_CTR32_BE` since commit
//! 121fcdc84d82). Everything else (hw_counters, netdev statistics, carrier counts, the other
//! ethtool statistics) is treated as 64 bits: a 64-bit counter of bytes at 800 Gb/s takes
//! 5.8 years to wrap, so a wrap is not a thing a soak can meet; a value that goes down is a
//! reset.

use serde::{Deserialize, Serialize};

use linerate_proto::soak::CounterSource;

/// The width of one counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "bits", rename_all = "snake_case")]
pub enum CounterWidth {
    /// Exactly this many bits; saturates at 2^bits−1 when below 64.
    Bits(u8),
    /// 32 bits (PortCounters) or 64 (PortCountersExtended): decided from the values seen.
    DataCounter,
}

/// 2^32−1: where a 32-bit data counter pegs.
pub const U32_MAX: u64 = u32::MAX as u64;

impl CounterWidth {
    /// The value at which the counter stops counting, given the largest value seen so far;
    /// `None` when it cannot saturate in practice (64 bits, or a data counter proved 64 bits).
    pub fn saturation_value(self, max_seen: u64) -> Option<u64> {
        match self {
            Self::Bits(b) if b < 64 => Some((1u64 << b) - 1),
            Self::Bits(_) => None,
            Self::DataCounter if max_seen > U32_MAX => None,
            Self::DataCounter => Some(U32_MAX),
        }
    }

    /// Bits, for people: `16`, or `32/64` for a data counter.
    pub fn label(self) -> String {
        match self {
            Self::Bits(b) => b.to_string(),
            Self::DataCounter => "32/64".into(),
        }
    }
}

/// The width of counter `name` read from `source`.
pub fn counter_width(source: CounterSource, name: &str) -> CounterWidth {
    match source {
        CounterSource::IbCounters => ib_pma_width(name),
        CounterSource::Ethtool if name == "link_down_events_phy" => CounterWidth::Bits(32),
        CounterSource::IbHwCounters
        | CounterSource::NetdevStatistics
        | CounterSource::Carrier
        | CounterSource::Ethtool => CounterWidth::Bits(64),
    }
}

/// The PMA PortCounters widths ([K:Documentation/ABI/stable/sysfs-class-infiniband],
/// sysfs-kb §1.4).
fn ib_pma_width(name: &str) -> CounterWidth {
    if let Some(bits) = linerate_model::ib::pma_error_counter_bits(name) {
        return CounterWidth::Bits(bits as u8);
    }
    match name {
        "port_xmit_data" | "port_rcv_data" | "port_xmit_packets" | "port_rcv_packets" => {
            CounterWidth::DataCounter
        }
        // unicast_/multicast_{xmit,rcv}_packets exist only as extended (64-bit) counters, and
        // anything newer is assumed wide rather than called saturated on a guess.
        _ => CounterWidth::Bits(64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ib_widths_match_the_pma_table() {
        let w = |n| counter_width(CounterSource::IbCounters, n);
        for (name, bits) in [
            ("symbol_error", 16),
            ("link_error_recovery", 8),
            ("link_downed", 8),
            ("port_rcv_errors", 16),
            ("port_rcv_remote_physical_errors", 16),
            ("local_link_integrity_errors", 4),
            ("excessive_buffer_overrun_errors", 4),
            ("port_xmit_discards", 16),
            ("port_xmit_wait", 32),
            ("VL15_dropped", 16),
            ("port_xmit_constraint_errors", 8),
            ("port_rcv_constraint_errors", 8),
            ("unicast_rcv_packets", 64),
        ] {
            assert_eq!(w(name), CounterWidth::Bits(bits), "{name}");
        }
        assert_eq!(w("port_rcv_data"), CounterWidth::DataCounter);
        assert_eq!(w("port_xmit_packets"), CounterWidth::DataCounter);
    }

    #[test]
    fn saturation_values() {
        assert_eq!(CounterWidth::Bits(4).saturation_value(0), Some(15));
        assert_eq!(CounterWidth::Bits(8).saturation_value(0), Some(255));
        assert_eq!(CounterWidth::Bits(16).saturation_value(0), Some(65535));
        assert_eq!(CounterWidth::Bits(64).saturation_value(0), None);
        // A data counter is 32 bits until a value proves 64.
        assert_eq!(CounterWidth::DataCounter.saturation_value(7), Some(U32_MAX));
        assert_eq!(
            CounterWidth::DataCounter.saturation_value(U32_MAX),
            Some(U32_MAX)
        );
        assert_eq!(
            CounterWidth::DataCounter.saturation_value(U32_MAX + 1),
            None
        );
    }

    #[test]
    fn other_sources_are_wide_but_link_down_events_phy() {
        assert_eq!(
            counter_width(CounterSource::Ethtool, "link_down_events_phy"),
            CounterWidth::Bits(32)
        );
        for s in [
            CounterSource::IbHwCounters,
            CounterSource::NetdevStatistics,
            CounterSource::Carrier,
            CounterSource::Ethtool,
        ] {
            // The same name under another source is not the PMA counter.
            assert_eq!(counter_width(s, "symbol_error"), CounterWidth::Bits(64));
        }
        assert_eq!(CounterWidth::DataCounter.label(), "32/64");
        assert_eq!(CounterWidth::Bits(4).label(), "4");
    }
}
