//! What to measure, its validation, and the memory layout both sides derive from it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::RdmaError;

/// The RDMA operation measured.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// One-sided RDMA write into the target's region (ib_write_bw, ib_write_lat).
    Write,
    /// One-sided RDMA read from the target's region (ib_read_bw, ib_read_lat).
    Read,
    /// Two-sided send into receives the target posted (ib_send_bw, ib_send_lat).
    Send,
}

impl Op {
    pub(crate) fn code(self) -> u8 {
        match self {
            Op::Write => 1,
            Op::Read => 2,
            Op::Send => 3,
        }
    }
    pub(crate) fn from_code(c: u8) -> Option<Op> {
        match c {
            1 => Some(Op::Write),
            2 => Some(Op::Read),
            3 => Some(Op::Send),
            _ => None,
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Send => "send",
        })
    }
}

/// Largest registered region per side.
pub const MAX_REGION: usize = 1 << 30;
/// Largest window of outstanding operations.
pub const MAX_WINDOW: usize = 4096;
/// Largest message.
pub const MAX_MESSAGE: usize = 256 << 20;

/// Parameters of one connection. The initiator's travel to the target in the connection request,
/// so both sides lay out their regions alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    pub op: Op,
    /// Bytes per message for single runs (a sweep passes each size to `bandwidth`/`latency`).
    pub size: usize,
    /// Operations outstanding at once (perftest's --tx-depth).
    pub window: usize,
    /// Fill every payload with a pattern of its sequence number and offset, and check every byte
    /// received (send, write: the target checks; read: the initiator checks).
    pub verify: bool,
    /// The largest message this connection will carry: the registered region is sized for it.
    pub max_size: usize,
    /// How long one operation may go without completing before the run fails (peer dead).
    pub op_timeout: Duration,
    /// Interval between samples pushed to `on_interval`.
    pub interval: Duration,
}

impl Params {
    /// `op` with `size`-byte messages, window 16, no verification, region sized for `size`.
    pub fn new(op: Op, size: usize) -> Params {
        Params {
            op,
            size,
            window: 16,
            verify: false,
            max_size: size,
            op_timeout: Duration::from_secs(5),
            interval: Duration::from_secs(1),
        }
    }

    /// Bytes of memory each side registers for these parameters.
    pub fn region_bytes(&self) -> usize {
        Layout::of(self).total()
    }

    /// Checks the parameters, and that the regions they imply fit [`MAX_REGION`].
    pub fn validate(&self) -> Result<(), RdmaError> {
        let bad = |s: String| Err(RdmaError::InvalidParams(s));
        if self.max_size == 0 {
            return bad("max_size is 0: the region must hold at least one byte".into());
        }
        if self.max_size > MAX_MESSAGE {
            return bad(format!(
                "max_size {} is above the {} MiB limit",
                self.max_size,
                MAX_MESSAGE >> 20
            ));
        }
        check_size(self.size, self.max_size)?;
        if self.window == 0 {
            return bad("window is 0: at least one operation must be outstanding".into());
        }
        if self.window > MAX_WINDOW {
            return bad(format!(
                "window {} is above the limit of {MAX_WINDOW}",
                self.window
            ));
        }
        if self.op_timeout.is_zero() {
            return bad("op_timeout is 0".into());
        }
        let need = Layout::of(self).total();
        if need > MAX_REGION {
            return bad(format!(
                "window {} x max_size {} needs a {} MiB region per side, above the {} MiB limit (lower the window or the largest size)",
                self.window,
                self.max_size,
                need >> 20,
                MAX_REGION >> 20
            ));
        }
        Ok(())
    }
}

/// Checks one message size against the region's largest.
pub(crate) fn check_size(size: usize, max_size: usize) -> Result<(), RdmaError> {
    if size == 0 {
        return Err(RdmaError::InvalidParams(
            "message size is 0 bytes: RDMA messages must carry at least 1 byte".into(),
        ));
    }
    if size > max_size {
        return Err(RdmaError::InvalidParams(format!(
            "message size {size} bytes is beyond the registered region ({max_size} bytes per message; connect with a larger max_size)"
        )));
    }
    Ok(())
}

/// Size of one control message.
pub(crate) const CTRL_SIZE: usize = 64;
/// Receives and control buffers kept beyond the window.
pub(crate) const CTRL_EXTRA: usize = 8;

/// The registered region of one side (both sides use the same layout):
/// `[latency source: max_size][data slots: slots x max_size][receives: rx_count x rx_size][control sends: ctrl_count x 64]`.
/// The peer writes into and reads from the data slots only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub max_size: usize,
    pub slots: usize,
    pub rx_count: usize,
    pub rx_size: usize,
    pub ctrl_count: usize,
}

impl Layout {
    pub(crate) fn of(p: &Params) -> Layout {
        Layout {
            max_size: p.max_size,
            slots: if p.verify { p.window } else { 1 },
            rx_count: p.window + CTRL_EXTRA,
            rx_size: if p.op == Op::Send {
                p.max_size.max(CTRL_SIZE)
            } else {
                CTRL_SIZE
            },
            ctrl_count: p.window + CTRL_EXTRA,
        }
    }
    /// The latency source buffer is first (a method, to read like the other areas).
    #[allow(clippy::unused_self)]
    pub(crate) fn lat_src(self) -> usize {
        0
    }
    pub(crate) fn data(&self, slot: usize) -> usize {
        self.max_size.saturating_mul(1 + slot)
    }
    pub(crate) fn rx(&self, i: usize) -> usize {
        self.data(self.slots) + i * self.rx_size
    }
    pub(crate) fn ctrl(&self, i: usize) -> usize {
        self.rx(self.rx_count) + i * CTRL_SIZE
    }
    pub(crate) fn total(&self) -> usize {
        self.max_size
            .saturating_mul(1 + self.slots)
            .saturating_add(self.rx_count.saturating_mul(self.rx_size))
            .saturating_add(self.ctrl_count * CTRL_SIZE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Params {
        Params::new(Op::Write, 4096)
    }

    #[test]
    fn defaults_are_valid() {
        p().validate().unwrap();
    }

    #[test]
    fn zero_size_is_rejected() {
        let e = Params { size: 0, ..p() }.validate().unwrap_err();
        assert!(e.to_string().contains("0 bytes"), "{e}");
    }

    #[test]
    fn size_beyond_region_is_rejected() {
        let e = Params { size: 8192, ..p() }.validate().unwrap_err();
        assert!(
            e.to_string().contains("beyond the registered region"),
            "{e}"
        );
    }

    #[test]
    fn zero_window_is_rejected() {
        let e = Params { window: 0, ..p() }.validate().unwrap_err();
        assert!(e.to_string().contains("window is 0"), "{e}");
    }

    #[test]
    fn huge_regions_are_rejected() {
        let e = Params {
            window: 256,
            verify: true,
            max_size: 8 << 20,
            ..p()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("MiB limit"), "{e}");
        let e = Params {
            window: 100_000,
            ..p()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("limit of 4096"), "{e}");
        let e = Params {
            max_size: 1 << 40,
            size: 1,
            ..p()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("max_size"), "{e}");
    }

    #[test]
    fn layout_areas_do_not_overlap() {
        let l = Layout::of(&Params {
            verify: true,
            window: 4,
            op: Op::Send,
            ..p()
        });
        assert_eq!(l.slots, 4);
        assert_eq!(l.data(0), 4096);
        assert_eq!(l.rx(0), 5 * 4096);
        assert_eq!(l.ctrl(0), l.rx(0) + l.rx_count * 4096);
        assert_eq!(l.total(), l.ctrl(l.ctrl_count));
        let w = Layout::of(&p());
        assert_eq!(w.slots, 1);
        assert_eq!(w.rx_size, CTRL_SIZE);
    }
}
