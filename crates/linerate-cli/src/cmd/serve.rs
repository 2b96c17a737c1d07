use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use linerate_bench::{ServerConfig, WriteDir};
use linerate_proto::Limits;

use crate::cli::ServeArgs;

pub fn config(a: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    Ok(ServerConfig {
        bind: SocketAddr::new(a.bind, a.port),
        limits: Limits {
            max_tests: a.max_tests,
            max_streams: a.max_streams,
            max_duration_ms: a.max_duration.max(1000),
            max_udp_bitrate_bps: a.max_udp_bitrate,
            max_length: a.max_length,
            max_file_bytes: a.max_file_size,
            max_spin_us: a.max_spin,
            max_soak_duration_ms: a.max_soak_duration.max(1000),
            ..Limits::default()
        },
        psk,
        handshake_timeout: Duration::from_millis(a.handshake_timeout.max(100)),
        max_pending: a.max_pending,
        max_memory_bytes: u64::from(a.max_memory),
        max_served: a.once.then_some(1),
        inventory: Some(crate::iface::provider()),
        log: true,
        write_dir: a
            .write_dir
            .as_deref()
            .map(|d| WriteDir::open(d).map(Arc::new))
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?,
        soak: Some(super::soak::sampler_fn(
            a.root.clone(),
            linerate_proto::soak::End::Remote,
            Arc::new(super::soak::SamplingCost::default()),
        )),
    })
}

pub fn run(a: &ServeArgs) -> anyhow::Result<u8> {
    linerate_bench::serve(config(a)?)?;
    Ok(0)
}
