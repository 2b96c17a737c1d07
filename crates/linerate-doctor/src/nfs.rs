//! The NFS-over-RDMA lines of `/etc/fstab` that are not mounted: whether their server listens
//! for RDMA on the line's port (and on 20049 when the line names another), by opening an RDMA
//! connection there and closing it at once. The answers go into the inventory for the rules
//! (`nfs.mount_fails`) to name the cause. Live hosts only: `probe` and `doctor` call it when
//! their root is `/`.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use linerate_facts::{Inventory, RdmaKnock};

/// How long one connection attempt waits for the server's answer. A port nothing listens on is
/// refused in milliseconds; this bounds a server that does not answer at all.
pub const KNOCK_TIMEOUT: Duration = Duration::from_secs(4);

/// The NFS/RDMA port (IANA `nfsrdma`).
const NFS_RDMA_PORT: u16 = 20049;

/// Fills `knock` (and `knock_default_port`) of each line of `inv`'s `/etc/fstab` that asks for
/// NFS over RDMA, is not mounted, is mounted at boot (no `noauto`) and names a server address.
/// Without libfabric each such line records why no connection could be tried.
pub fn knock_unmounted(inv: &mut Inventory) {
    let stack = &mut inv.rdma_stack;
    let mounts = &stack.nfs_mounts;
    let mut todo = stack
        .nfs_fstab
        .iter_mut()
        .filter(|e| e.awaits_mount(mounts))
        .filter_map(|e| {
            let ip: IpAddr = e.addr.as_deref()?.parse().ok()?;
            Some((ip, e))
        })
        .peekable();
    if todo.peek().is_none() {
        return;
    }
    let fabric = linerate_rdma::Fabric::load();
    for (ip, e) in todo {
        let port = e.port.unwrap_or(NFS_RDMA_PORT);
        let knock = |port: u16| match &fabric {
            Ok(f) => from_rdma(f.knock(SocketAddr::new(ip, port), KNOCK_TIMEOUT)),
            Err(err) => RdmaKnock::Failed {
                call: "loading libfabric".into(),
                text: err.to_string(),
            },
        };
        e.knock = Some(knock(port));
        if port != NFS_RDMA_PORT && e.knock == Some(RdmaKnock::Refused) {
            e.knock_default_port = Some(knock(NFS_RDMA_PORT));
        }
    }
}

fn from_rdma(k: linerate_rdma::Knock) -> RdmaKnock {
    match k {
        linerate_rdma::Knock::Accepted => RdmaKnock::Accepted,
        linerate_rdma::Knock::Refused => RdmaKnock::Refused,
        linerate_rdma::Knock::TimedOut => RdmaKnock::TimedOut,
        linerate_rdma::Knock::Failed { call, text } => RdmaKnock::Failed { call, text },
    }
}
