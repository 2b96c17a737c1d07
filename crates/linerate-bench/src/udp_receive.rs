//! What UDP receive counted on this side's host while a UDP test ran: the host-wide counters
//! (`linerate_inventory::counters::udp_receive`: delivered, dropped for a full socket buffer,
//! every receive error) read before the test and after it, in the network namespace the test
//! runs in: the server around its side; the client from before the server can send until the
//! server's results came, its sockets open until then, so the datagrams that reach it after its
//! own receivers stopped (the test counts them lost) are in its window too. Each side sends
//! its own in its results (`SideResults::udp_receive`), so a datagram lost at the receiving
//! socket is told from one lost on the path.

use std::path::Path;

use linerate_facts::UdpReceive;
use linerate_proto::TestKind;

/// The counters before a UDP test.
pub(crate) struct UdpWatch(UdpReceive);

/// Starts watching for a UDP test (`UdpBw`, `UdpLat`); None for the other kinds, or where
/// `/proc/net/snmp` cannot be read.
pub(crate) fn watch(kind: TestKind) -> Option<UdpWatch> {
    matches!(kind, TestKind::UdpBw | TestKind::UdpLat)
        .then(|| linerate_inventory::counters::udp_receive(Path::new("/")))
        .flatten()
        .map(UdpWatch)
}

impl UdpWatch {
    /// What the counters rose by since [`watch`]; None when they cannot be read now.
    pub(crate) fn finish(self) -> Option<UdpReceive> {
        linerate_inventory::counters::udp_receive(Path::new("/")).map(|now| now.since(&self.0))
    }
}
