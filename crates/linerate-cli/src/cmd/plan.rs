use anyhow::Context;
use linerate_model::pcie::ASSUMED_MPS;
use linerate_model::{spec, CeilingInput, IpFraming, LinkInput, MtuInput, Usability};
use linerate_report::Style;

use crate::cli::{IpoibModeArg, PlanArgs};
use crate::out::print;

pub fn input(a: &PlanArgs) -> anyhow::Result<CeilingInput> {
    let link = spec::parse_link(&a.link)?;
    let pcie = a.pcie.as_deref().map(spec::parse_pcie).transpose()?;
    let mtu = a.mtu.map(|mtu| {
        let transport = match (&link, a.ipoib) {
            (LinkInput::Ethernet(_), _) => IpFraming::Ethernet,
            (LinkInput::Infiniband(_), Some(IpoibModeArg::Connected)) => IpFraming::IpoibConnected,
            (LinkInput::Infiniband(_), Some(IpoibModeArg::Datagram)) => IpFraming::IpoibDatagram,
            (LinkInput::Infiniband(_), None) if mtu > 4092 => IpFraming::IpoibConnected,
            (LinkInput::Infiniband(_), None) => IpFraming::IpoibDatagram,
        };
        MtuInput { mtu, transport }
    });
    if let (Some(m), LinkInput::Infiniband(_)) = (&mtu, &link) {
        if m.transport == IpFraming::IpoibDatagram && m.mtu > 4092 {
            anyhow::bail!(
                "--mtu {}: IPoIB datagram mode carries at most 4092 bytes (IB MTU 4096 minus the 4-byte IPoIB header); use --ipoib connected for up to 65520",
                m.mtu
            );
        }
        if m.mtu > 65520 {
            anyhow::bail!("--mtu {}: IPoIB allows at most 65520", m.mtu);
        }
    }
    let (mps, mps_known) = match &a.mps {
        Some(s) => (s.parse().context("--mps")?, true),
        None => (ASSUMED_MPS, false),
    };
    Ok(CeilingInput {
        link: Some(link),
        pcie,
        mps,
        mps_known,
        mtu,
        usability: Usability::Usable,
        vf: None,
    })
}

pub fn run(a: &PlanArgs, style: Style) -> anyhow::Result<u8> {
    let input = input(a)?;
    let c = linerate_model::ceiling(&input);
    if a.json {
        let mut s = serde_json::to_string_pretty(&linerate_report::plan_doc(&input, &c))?;
        s.push('\n');
        print(&s)?;
    } else {
        print(&linerate_report::render_plan(&input, &c, style))?;
    }
    Ok(0)
}
