//! What the qdiscs of a test's interface dropped while it ran: `linerate_inventory::qdisc`'s
//! watch, started on the interface of the test's local address just before the test and read
//! just after it. Each side sends its own in its results (`SideResults::qdiscs`).

use std::net::IpAddr;

use linerate_inventory::qdisc::QdiscWatch;

/// The qdiscs of the interface holding `local_ip` (and the ifb devices its ingress redirects
/// to) now; None when the interface or rtnetlink cannot be read.
pub(crate) fn watch(local_ip: IpAddr) -> Option<QdiscWatch> {
    let name = linerate_engine::sys::interface_of(local_ip)?;
    QdiscWatch::start(&name)
}
