//! The devices' firmware: `fw.outdated`, `fw.oem` and `fw.end_of_life`.

use linerate_facts::{Finding, FindingId, Inventory, Severity};

/// `fw.outdated`, `fw.oem` and `fw.end_of_life`: each RDMA device's firmware against the newest
/// NVIDIA publishes for its family (`linerate_model::firmware`).
pub(super) fn firmware(inv: &Inventory, out: &mut Vec<Finding>) {
    use linerate_model::firmware::{judge, FirmwareState, TABLE_UPDATED};
    for d in &inv.ib_devices {
        let Some(f) = d.pci.as_deref().and_then(|a| inv.pci(a)) else {
            continue;
        };
        let st = judge(
            f.vendor,
            f.device,
            d.fw_ver.as_deref(),
            d.board_id.as_deref(),
        );
        let (Some(family), Some(version)) = (st.family.as_deref(), st.version.as_deref()) else {
            continue;
        };
        let psid = st.psid.as_deref().unwrap_or("?");
        let bdf = &f.address;
        // The device as people see it: with its ports (`mlx4_0 (ib0, ib1)`).
        let ports: Vec<&str> = inv
            .ports
            .iter()
            .filter(|p| p.device.as_deref() == Some(d.name.as_str()))
            .map(|p| p.name.as_str())
            .collect();
        let name = if ports.is_empty() {
            d.name.clone()
        } else {
            format!("{} ({})", d.name, ports.join(", "))
        };
        let base = |id, sev| {
            Finding::new(id, sev, bdf)
                .evidence(format!("/sys/class/infiniband/{}/fw_ver", d.name), version)
                .evidence(format!("/sys/class/infiniband/{}/board_id", d.name), psid)
                .evidence(
                    "newest known",
                    st.newest_known.as_deref().unwrap_or("unknown"),
                )
                .evidence("source", st.source.as_deref().unwrap_or("?"))
        };
        let tools = if st
            .legacy
            .as_deref()
            .is_some_and(|l| l.contains("mstflint 4.26"))
        {
            " (mstflint 4.25 or older: later releases dropped this family)"
        } else {
            ""
        };
        let newest = st.newest_known.as_deref().unwrap_or("?");
        match st.status {
            FirmwareState::Outdated => out.push(
                base(FindingId::FwOutdated, Severity::Warning)
                    .message(format!(
                        "{name} ({family}, PSID {psid}) runs firmware {version}; NVIDIA's newest for {family} is {newest} (firmware table of {TABLE_UPDATED})"
                    ))
                    .fix(format!(
                        "Check with `mstflint -d {bdf} query`{tools}; download the {newest} image for PSID {psid} (https://network.nvidia.com/support/firmware/firmware-downloads/, or `mlxfwmanager --online -u -d {bdf}` with NVIDIA's tools), burn it with `mstflint -d {bdf} -i IMAGE.bin burn`, then `mstfwreset -d {bdf} reset` or a reboot."
                    )),
            ),
            FirmwareState::Oem => out.push(
                base(FindingId::FwOem, Severity::Info)
                    .message(format!(
                        "{name} ({family}) carries {}'s PSID {psid} and firmware {version}: its maker publishes its firmware, numbered on its own line, so it is not compared with NVIDIA's ({newest} for {family})",
                        st.psid_owner.as_deref().unwrap_or("an OEM")
                    ))
                    .fix(format!(
                        "Update from {}'s support site for this part. Cross-flashing NVIDIA's image onto an OEM card needs `mstflint -d {bdf} -i IMAGE.bin --allow_psid_change burn`: mstflint warns that changing a PSID may cause the device to malfunction, secure firmware refuses it, and the card's warranty and OEM features may not survive it.",
                        st.psid_owner.as_deref().unwrap_or("the OEM")
                    )),
            ),
            FirmwareState::Current | FirmwareState::Unknown => {}
        }
        if let Some(legacy) = &st.legacy {
            let tail = if st.last {
                format!("{newest} is its last firmware")
            } else {
                format!("the newest firmware known for it is {newest}")
            };
            out.push(
                base(FindingId::FwEndOfLife, Severity::Info)
                    .message(format!(
                        "{name} is a {family}: {legacy}; {tail}, and this card runs {version}"
                    ))
                    .fix("Nothing to fix while it works: the kernel's own driver still supports it. For new features or fixes, a newer card.".to_string()),
            );
        }
    }
}
