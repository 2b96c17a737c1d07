//! The code tables every module map shares: SFF-8024 (Rev 4.x) identifiers (Table 4-1),
//! connectors (Table 4-3), extended compliance codes (Table 4-4), host electrical interfaces
//! (Table 4-5, used by CMIS applications) and the transmitter technology nibble of SFF-8636
//! byte 147 / CMIS byte 212. Only the codes a diagnosis needs carry a meaning beyond their name.

use linerate_facts::{Media, ModuleStandard};

/// The identifier's name and the memory map it implies (ethtool's dispatch, `module-common.h`).
pub fn identifier(id: u8, revision: u8) -> Option<(&'static str, ModuleStandard)> {
    Some(match id {
        0x01 => ("GBIC", ModuleStandard::Sff8472),
        0x02 => ("soldered module", ModuleStandard::Sff8472),
        0x03 => ("SFP/SFP+/SFP28", ModuleStandard::Sff8472),
        // QSFP and QSFP+ follow SFF-8436 until their revision byte says SFF-8636 (0x03 and
        // later), as the kernel's drivers decide it (mlx5 `mlx5e_get_module_info`).
        0x0c => ("QSFP", qsfp(revision)),
        0x0d => ("QSFP+", qsfp(revision)),
        0x11 => ("QSFP28", ModuleStandard::Sff8636),
        0x18 => ("QSFP-DD", ModuleStandard::Cmis),
        0x19 => ("OSFP", ModuleStandard::Cmis),
        0x1b => ("DSFP", ModuleStandard::Cmis),
        0x1e => ("QSFP+ or later with CMIS", ModuleStandard::Cmis),
        0x1f => ("SFP-DD with CMIS", ModuleStandard::Cmis),
        0x20 => ("SFP+ with CMIS", ModuleStandard::Cmis),
        _ => return None,
    })
}

fn qsfp(revision: u8) -> ModuleStandard {
    if revision >= 3 {
        ModuleStandard::Sff8636
    } else {
        ModuleStandard::Sff8436
    }
}

/// Table 4-3.
pub fn connector(code: u8) -> Option<&'static str> {
    Some(match code {
        0x01 => "SC",
        0x02 => "Fibre Channel Style 1 copper",
        0x03 => "Fibre Channel Style 2 copper",
        0x04 => "BNC/TNC",
        0x05 => "Fibre Channel coax",
        0x06 => "Fiber Jack",
        0x07 => "LC",
        0x08 => "MT-RJ",
        0x09 => "MU",
        0x0a => "SG",
        0x0b => "Optical pigtail",
        0x0c => "MPO 1x12",
        0x0d => "MPO 2x16",
        0x20 => "HSSDC II",
        0x21 => "Copper pigtail",
        0x22 => "RJ45",
        0x23 => "No separable connector",
        0x24 => "MXC 2x16",
        0x25 => "CS optical connector",
        0x26 => "SN optical connector",
        0x27 => "MPO 2x12",
        0x28 => "MPO 1x16",
        _ => return None,
    })
}

/// Table 4-4: (name, media). Codes 0x01-0x33 shared by SFP byte 36 and QSFP byte 192.
pub fn extended_compliance(code: u8) -> Option<(&'static str, Media)> {
    use Media::{
        ActiveCopper as Acc, ActiveOptical as Aoc, BaseT, MultimodeFiber as Mmf,
        PassiveCopper as Dac, SinglemodeFiber as Smf,
    };
    Some(match code {
        0x01 => ("100G AOC or 25GAUI C2M AOC (BER 5e-5)", Aoc),
        0x02 => ("100GBASE-SR4 or 25GBASE-SR", Mmf),
        0x03 => ("100GBASE-LR4 or 25GBASE-LR", Smf),
        0x04 => ("100GBASE-ER4 or 25GBASE-ER", Smf),
        0x05 => ("100GBASE-SR10", Mmf),
        0x06 => ("100G CWDM4", Smf),
        0x07 => ("100G PSM4", Smf),
        0x08 => ("100G ACC or 25GAUI C2M ACC (BER 5e-5)", Acc),
        0x0b => ("100GBASE-CR4 or 25GBASE-CR CA-25G-L", Dac),
        0x0c => ("25GBASE-CR CA-25G-S", Dac),
        0x0d => ("25GBASE-CR CA-25G-N", Dac),
        0x10 => ("40GBASE-ER4", Smf),
        0x11 => ("4 x 10GBASE-SR", Mmf),
        0x12 => ("40G PSM4", Smf),
        0x16 => ("10GBASE-T with SFI", BaseT),
        0x17 => ("100G CLR4", Smf),
        0x18 => ("100G AOC or 25GAUI C2M AOC (BER 1e-12)", Aoc),
        0x19 => ("100G ACC or 25GAUI C2M ACC (BER 1e-12)", Acc),
        0x1c => ("10GBASE-T short reach", BaseT),
        0x1d => ("5GBASE-T", BaseT),
        0x1e => ("2.5GBASE-T", BaseT),
        0x1f => ("40G SWDM4", Mmf),
        0x20 => ("100G SWDM4", Mmf),
        0x21 => ("100G PAM4 BiDi", Mmf),
        0x25 => ("100GBASE-DR", Smf),
        0x26 => ("100G-FR or 100GBASE-FR1", Smf),
        0x27 => ("100G-LR or 100GBASE-LR1", Smf),
        0x30 => (
            "ACC with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M (BER 1e-6)",
            Acc,
        ),
        0x31 => (
            "AOC with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M (BER 1e-6)",
            Aoc,
        ),
        0x32 => (
            "ACC with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M (BER 2.6e-4)",
            Acc,
        ),
        0x33 => (
            "AOC with 50GAUI, 100GAUI-2 or 200GAUI-4 C2M (BER 2.6e-4)",
            Aoc,
        ),
        0x40 => ("50GBASE-CR, 100GBASE-CR2 or 200GBASE-CR4", Dac),
        0x41 => ("50GBASE-SR, 100GBASE-SR2 or 200GBASE-SR4", Mmf),
        0x42 => ("50GBASE-FR or 200GBASE-DR4", Smf),
        0x43 => ("200GBASE-FR4", Smf),
        0x45 => ("50GBASE-LR", Smf),
        0x46 => ("200GBASE-LR4", Smf),
        _ => return None,
    })
}

/// Table 4-5, the host side of a CMIS application: (name, Gb/s). `0xff` ends the list.
pub fn host_interface(code: u8) -> Option<(&'static str, f64)> {
    Some(match code {
        0x01 => ("1000BASE-CX", 1.0),
        0x02 => ("XAUI", 10.0),
        0x03 => ("XFI", 10.0),
        0x04 => ("SFI", 10.0),
        0x05 => ("25GAUI C2M", 25.0),
        0x06 => ("XLAUI C2M", 40.0),
        0x07 => ("XLPPI", 40.0),
        0x08 => ("LAUI-2 C2M", 50.0),
        0x09 => ("50GAUI-2 C2M", 50.0),
        0x0a => ("50GAUI-1 C2M", 50.0),
        0x0b => ("CAUI-4 C2M", 100.0),
        0x0c => ("100GAUI-4 C2M", 100.0),
        0x0d => ("100GAUI-2 C2M", 100.0),
        0x0e => ("200GAUI-8 C2M", 200.0),
        0x0f => ("200GAUI-4 C2M", 200.0),
        0x10 => ("400GAUI-16 C2M", 400.0),
        0x11 => ("400GAUI-8 C2M", 400.0),
        0x13 => ("10GBASE-CX4", 10.0),
        0x14 => ("25GBASE-CR CA-25G-L", 25.0),
        0x15 => ("25GBASE-CR CA-25G-S", 25.0),
        0x16 => ("25GBASE-CR CA-25G-N", 25.0),
        0x17 => ("40GBASE-CR4", 40.0),
        0x18 => ("50GBASE-CR2 with RS-FEC", 50.0),
        0x19 => ("50GBASE-CR2 with BASE-R FEC", 50.0),
        0x1a => ("50GBASE-CR2 without FEC", 50.0),
        0x1b => ("50GBASE-CR", 50.0),
        0x1c => ("100GBASE-CR10", 100.0),
        0x1d => ("100GBASE-CR4", 100.0),
        0x1e => ("100GBASE-CR2", 100.0),
        0x1f => ("200GBASE-CR4", 200.0),
        0x20 => ("400G CR8", 400.0),
        0x41 => ("CAUI-4 C2M without FEC", 100.0),
        0x42 => ("CAUI-4 C2M with RS-FEC", 100.0),
        _ => return None,
    })
}

/// The transmitter technology nibble (SFF-8636 byte 147 bits 7-4) or CMIS byte 212: its name
/// and the media it implies (copper codes say whether the cable is passive or active).
pub fn transmitter(code: u8) -> Option<(&'static str, Media)> {
    Some(match code {
        0x00 => ("850 nm VCSEL", Media::MultimodeFiber),
        0x01 => ("1310 nm VCSEL", Media::SinglemodeFiber),
        0x02 => ("1550 nm VCSEL", Media::SinglemodeFiber),
        0x03 => ("1310 nm FP", Media::SinglemodeFiber),
        0x04 => ("1310 nm DFB", Media::SinglemodeFiber),
        0x05 => ("1550 nm DFB", Media::SinglemodeFiber),
        0x06 => ("1310 nm EML", Media::SinglemodeFiber),
        0x07 => ("1550 nm EML", Media::SinglemodeFiber),
        0x08 => ("other", Media::Unknown),
        0x09 => ("1490 nm DFB", Media::SinglemodeFiber),
        0x0a => ("copper cable, unequalized", Media::PassiveCopper),
        0x0b => ("copper cable, passive equalized", Media::PassiveCopper),
        0x0c => (
            "copper cable, near and far end limiting active equalizers",
            Media::ActiveCopper,
        ),
        0x0d => (
            "copper cable, far end limiting active equalizers",
            Media::ActiveCopper,
        ),
        0x0e => (
            "copper cable, near end limiting active equalizers",
            Media::ActiveCopper,
        ),
        0x0f => (
            "copper cable, linear active equalizers",
            Media::ActiveCopper,
        ),
        0x10 => ("C-band tunable laser", Media::SinglemodeFiber),
        0x11 => ("L-band tunable laser", Media::SinglemodeFiber),
        _ => return None,
    })
}
