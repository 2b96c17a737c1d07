//! The list of ports: RDMA ports and netdevs joined, the unit of the report.

use serde::{Deserialize, Serialize};

use super::LinkLayer;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortKind {
    /// An InfiniBand port (with or without an IPoIB netdev).
    Infiniband,
    /// An RDMA-capable Ethernet port (RoCE).
    Roce,
    /// A plain Ethernet NIC port.
    Ethernet,
    /// Paravirtual NIC (virtio, vmxnet3, ...): no physical link to model.
    Paravirtual,
    /// Software device: bridge, veth, bond, tun...
    Virtual,
    Loopback,
    /// Any other interface type.
    Other,
}

impl PortKind {
    /// The name serde gives it (`infiniband`, `roce`, `loopback`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Infiniband => "infiniband",
            Self::Roce => "roce",
            Self::Ethernet => "ethernet",
            Self::Paravirtual => "paravirtual",
            Self::Virtual => "virtual",
            Self::Loopback => "loopback",
            Self::Other => "other",
        }
    }

    /// No physical link behind it: loopback, a software device, or a paravirtual NIC.
    pub fn is_virtual(self) -> bool {
        matches!(self, Self::Loopback | Self::Virtual | Self::Paravirtual)
    }
}

/// One network port, the unit of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// Netdev name, or `device/port` for an RDMA port without one.
    pub name: String,
    pub kind: PortKind,
    /// IB device (`mlx4_0`), else the PCI address for plain NICs, else none.
    pub device: Option<String>,
    /// IB port number.
    pub port: Option<u32>,
    pub netdev: Option<String>,
    pub pci: Option<String>,
    pub link_layer: LinkLayer,
}

#[cfg(test)]
mod tests {
    use super::super::IpoibMode;
    use super::PortKind;

    /// `as_str` is the name serde writes and reads (doctor's `path.local.port_kind`).
    #[test]
    fn names_are_the_serde_names() {
        for k in [
            PortKind::Infiniband,
            PortKind::Roce,
            PortKind::Ethernet,
            PortKind::Paravirtual,
            PortKind::Virtual,
            PortKind::Loopback,
            PortKind::Other,
        ] {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<PortKind>(&json).unwrap(), k);
        }
        for m in [IpoibMode::Datagram, IpoibMode::Connected] {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
            assert_eq!(serde_json::from_str::<IpoibMode>(&json).unwrap(), m);
        }
    }
}
