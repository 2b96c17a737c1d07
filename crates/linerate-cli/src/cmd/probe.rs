use std::fmt::Write as _;

use anyhow::Context;
use linerate_report::Style;
use serde::Serialize;

use crate::cli::ProbeArgs;
use crate::out::print;

/// What libfabric sees on this host: its version and the providers offering RMA/MSG
/// endpoints, or why there are none.
#[derive(Debug, Serialize)]
pub struct RdmaView {
    /// The libfabric version loaded; None when it is not installed.
    pub libfabric: Option<String>,
    pub providers: Vec<linerate_rdma::ProviderInfo>,
    pub error: Option<String>,
    /// Why libibverbs could not say each port's MTUs (sysfs does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verbs_error: Option<String>,
}

/// Each RDMA port's active and largest MTU, which sysfs does not have, from libibverbs
/// (`ibv_query_port`, as `ibv_devinfo` reads them).
fn apply_verbs(
    inv: &mut linerate_facts::Inventory,
) -> Result<(), linerate_rdma::verbs::VerbsError> {
    let devices = linerate_rdma::verbs::query()?;
    for d in &devices {
        let Some(dev) = inv.ib_devices.iter_mut().find(|x| x.name == d.name) else {
            continue;
        };
        for vp in &d.ports {
            if let Some(p) = dev
                .ports
                .iter_mut()
                .find(|p| p.number == u32::from(vp.number))
            {
                p.active_mtu = (vp.active_mtu_bytes > 0).then_some(vp.active_mtu_bytes);
                p.max_mtu = (vp.max_mtu_bytes > 0).then_some(vp.max_mtu_bytes);
            }
        }
    }
    Ok(())
}

pub fn rdma_view() -> RdmaView {
    match linerate_rdma::Fabric::load() {
        Ok(f) => match f.providers() {
            Ok(p) => RdmaView {
                libfabric: Some(f.version()),
                providers: p,
                error: None,
                verbs_error: None,
            },
            Err(e) => RdmaView {
                libfabric: Some(f.version()),
                providers: Vec::new(),
                error: Some(e.to_string()),
                verbs_error: None,
            },
        },
        Err(e) => RdmaView {
            libfabric: None,
            providers: Vec::new(),
            error: Some(e.to_string()),
            verbs_error: None,
        },
    }
}

fn render_rdma(v: &RdmaView, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold("RDMA (libfabric)"));
    match &v.libfabric {
        None => {
            let _ = writeln!(
                out,
                "    {}",
                v.error.as_deref().unwrap_or("RDMA unavailable")
            );
        }
        Some(ver) => {
            let _ = writeln!(out, "    libfabric {ver}");
            let mut seen = std::collections::BTreeSet::new();
            for p in &v.providers {
                if seen.insert((p.provider.clone(), p.domain.clone())) {
                    let _ = writeln!(
                        out,
                        "    {:<10} device {:<12} fabric {}",
                        p.provider, p.domain, p.fabric
                    );
                }
            }
            if let Some(e) = &v.error {
                let _ = writeln!(out, "    {e}");
            }
            let verbs = v.providers.iter().any(|p| p.provider.starts_with("verbs"));
            if verbs {
                let _ = writeln!(out, "    {}", style.dim("verbs connects through rdma_cm: the IPoIB or RoCE interface needs an IP address for `bench --rdma`"));
            }
        }
    }
    out
}

pub fn run(a: &ProbeArgs, style: Style) -> anyhow::Result<u8> {
    let mut inv = linerate_inventory::probe(&a.root)?;
    let root = a.root.display().to_string();
    // libfabric and libibverbs describe the live machine, not a --root tree.
    let live = a.root == std::path::Path::new("/");
    let mut rdma = live.then(rdma_view);
    let has_ib = !inv.ib_devices.is_empty();
    if live && has_ib {
        if let (Err(e), Some(r)) = (apply_verbs(&mut inv), rdma.as_mut()) {
            r.verbs_error = Some(e.to_string());
        }
    }
    if let Some(r) = rdma.as_ref() {
        inv.rdma_stack.libfabric =
            r.libfabric
                .as_ref()
                .map(|version| linerate_facts::LibfabricFacts {
                    version: version.clone(),
                    verbs: r
                        .providers
                        .iter()
                        .any(|p| p.provider.split(';').next() == Some("verbs")),
                    provider_filter: std::env::var("FI_PROVIDER").ok().filter(|v| !v.is_empty()),
                });
    }
    if live {
        linerate_doctor::nfs::knock_unmounted(&mut inv);
    }
    let analysis = linerate_rules::analyze(&inv);
    if a.json {
        let doc = linerate_facts::ProbeDoc::new(&inv, &analysis, &root);
        let mut v = serde_json::to_value(&doc).context("encoding JSON")?;
        if let (Some(o), Some(r)) = (v.as_object_mut(), &rdma) {
            o.insert(
                "rdma".into(),
                serde_json::to_value(r).context("encoding JSON")?,
            );
        }
        let mut s = serde_json::to_string_pretty(&v).context("encoding JSON")?;
        s.push('\n');
        print(&s)?;
    } else {
        let mut text = linerate_report::render_probe(&inv, &analysis, &a.root, style);
        if let Some(r) = &rdma {
            text.push('\n');
            if let Some(e) = &r.verbs_error {
                let _ = writeln!(
                    text,
                    "{}",
                    style.dim(&format!("the ports' MTUs are unknown: {e}"))
                );
            }
            text.push_str(&render_rdma(r, style));
        }
        print(&text)?;
    }
    if inv.ports.is_empty() && !a.json {
        eprintln!(
            "linerate: no network interfaces under {root} (expected entries in {root}/sys/class/net or {root}/sys/class/infiniband)"
        );
    }
    let failed = super::fail_threshold(a.fail_on)
        .is_some_and(|t| analysis.findings.iter().any(|f| f.severity >= t));
    Ok(if failed { super::EXIT_FINDINGS } else { 0 })
}
