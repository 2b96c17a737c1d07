//! Bonding interfaces (`/sys/class/net/<bond>/bonding/`): which ports a bond aggregates and how.

use serde::{Deserialize, Serialize};

/// One bonding interface as its `bonding/` directory describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bond {
    /// The bond's netdev (`bond0`).
    pub name: String,
    /// The mode's name as the kernel prints it (`802.3ad`, `active-backup`, `balance-rr`...),
    /// without its number; `None` when unreadable.
    pub mode: Option<String>,
    /// Its members (`bonding/slaves`), in the kernel's order.
    pub members: Vec<String>,
    /// The member carrying the traffic in `active-backup` (`bonding/active_slave`).
    pub active: Option<String>,
}

impl Bond {
    /// One member carries the traffic at a time (`active-backup`), or every member carries the
    /// same traffic (`broadcast`): the bond carries what one member does. In every other mode
    /// (`balance-rr`, `balance-xor`, `802.3ad`, `balance-tlb`, `balance-alb`) the members'
    /// traffic adds up (one flow stays on one member, except in `balance-rr`).
    pub fn one_member_at_a_time(&self) -> bool {
        matches!(self.mode.as_deref(), Some("active-backup" | "broadcast"))
    }
}
