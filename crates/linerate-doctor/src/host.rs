//! This host, as doctor's steps see it ([`crate::steps::ThisHost`]): its CPUs while a test
//! runs (`linerate_engine::hostcpu`), the interface a route goes out of, how idle its cores
//! are before the latency test, and the source file of the copy.

use std::fs::File;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use linerate_engine::hostcpu::{HostCpu, HostCpuMeter};

use crate::plan::SpinChoice;
use crate::steps::ThisHost;

/// How long doctor watches the CPUs before its latency test to decide whether to busy-poll.
const SPIN_WINDOW: Duration = Duration::from_millis(300);

/// The live host.
#[derive(Debug)]
pub struct LiveHost {
    meter: HostCpuMeter,
    bind: Option<IpAddr>,
}

impl LiveHost {
    /// This host testing against `far_end`; `in_process`: the far end runs in this process
    /// (else a far end on this host is found by its listening socket and its CPU counted as
    /// linerate's, not as contention).
    pub fn new(far_end: SocketAddr, in_process: bool, bind: Option<IpAddr>) -> Self {
        Self {
            meter: if in_process {
                HostCpuMeter::new()
            } else {
                HostCpuMeter::with_far_end(far_end)
            },
            bind,
        }
    }
}

impl LiveHost {
    /// The far end's processes on this host (pid, program), whose CPU counts as the far end's.
    pub fn far_end_here(&self) -> Vec<(u32, String)> {
        self.meter.peer_programs().to_vec()
    }

    /// The meter of this host's CPU, with the far end's processes found once.
    pub fn cpu_meter(&self) -> &HostCpuMeter {
        &self.meter
    }
}

impl ThisHost for LiveHost {
    fn during(&mut self, test: &mut dyn FnMut()) -> HostCpu {
        self.meter.during(test).1
    }

    fn route_interface(&self, to: SocketAddr) -> Option<String> {
        route_interface(to, self.bind)
    }

    fn spin_choice(&mut self, self_check: bool) -> SpinChoice {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let idle = linerate_engine::hostcpu::idle_cores(SPIN_WINDOW).map(|i| i.min(cpus as f64));
        crate::plan::latency_spin(
            cpus,
            idle,
            SPIN_WINDOW.as_secs_f64(),
            if self_check { 2 } else { 1 },
        )
    }

    fn copy_source(&mut self, dir: &Path, size: u64) -> Result<(File, tempfile::TempPath), String> {
        let named = tempfile::Builder::new()
            .prefix("source-")
            .suffix(".bin")
            .tempfile_in(dir)
            .map_err(|e| format!("creating the copy's source in {}: {e}", dir.display()))?;
        let (mut f, path) = named.into_parts();
        let shown = path.display().to_string();
        let block: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut left = size;
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            f.write_all(&block[..n])
                .map_err(|e| format!("writing {shown}: {e}"))?;
            left -= n as u64;
        }
        f.sync_all().map_err(|e| format!("writing {shown}: {e}"))?;
        // Read it back from the disk, not from memory.
        let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
        drop(f);
        let src = File::open(&path).map_err(|e| format!("opening {shown}: {e}"))?;
        Ok((src, path))
    }
}

/// The interface the kernel routes `to` through from `bind` (a UDP connect sends nothing).
pub fn route_interface(to: SocketAddr, bind: Option<IpAddr>) -> Option<String> {
    let any: IpAddr = if to.is_ipv6() {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    };
    let u = std::net::UdpSocket::bind(SocketAddr::new(bind.unwrap_or(any), 0)).ok()?;
    u.connect(to).ok()?;
    linerate_engine::sys::interface_of(u.local_addr().ok()?.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_routed_through_lo_and_the_source_is_removed() {
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(route_interface(to, None).as_deref(), Some("lo"));
        let dir = tempfile::tempdir().unwrap();
        let mut h = LiveHost::new(to, true, None);
        let (f, path) = h.copy_source(dir.path(), 3 << 20).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 3 << 20);
        assert!(path.exists());
        drop(path);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let cpu = h.during(&mut || std::thread::sleep(Duration::from_millis(30)));
        assert!(cpu.seconds >= 0.03, "{cpu:?}");
    }
}
