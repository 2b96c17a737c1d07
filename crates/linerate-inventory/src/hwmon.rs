//! A PCI function's own temperature sensors: `hwmon/hwmonN/tempK_*` under the function
//! (mlx5 from Linux 6.6, `drivers/net/ethernet/mellanox/mlx5/core/hwmon.c`; ice, bnxt_en,
//! igb, ixgbe and others), in millidegrees Celsius (Documentation/hwmon/sysfs-interface.rst).

use std::path::Path;

use linerate_facts::HwmonSensor;

use crate::fs::Root;

/// Most sensors read per chip (mlx5 has one per sensor of the ASIC and one per module).
const MAX_SENSORS: u32 = 64;

/// Every `tempN` of every hwmon chip under `dir` (the function at `address`).
pub fn read(r: &mut Root, dir: &Path, address: &str) -> Vec<HwmonSensor> {
    let mut out = Vec::new();
    let base = dir.join("hwmon");
    for chip in Root::list(&base) {
        if !chip.starts_with("hwmon") {
            continue;
        }
        let cdir = base.join(&chip);
        let name = r.opt(&cdir.join("name"), address);
        let mut temps: Vec<u32> = Root::list(&cdir)
            .iter()
            .filter_map(|f| {
                f.strip_prefix("temp")?
                    .strip_suffix("_input")?
                    .parse::<u32>()
                    .ok()
            })
            .filter(|n| *n <= MAX_SENSORS)
            .collect();
        temps.sort_unstable();
        for n in temps {
            let milli = |r: &mut Root, suffix: &str| {
                r.opt_parse(
                    &cdir.join(format!("temp{n}_{suffix}")),
                    address,
                    "millidegrees Celsius as a decimal number",
                    |v| v.parse::<i64>().ok(),
                )
                .map(|m| m as f64 / 1000.0)
            };
            out.push(HwmonSensor {
                chip: name.clone(),
                sensor: format!("temp{n}"),
                label: r.opt(&cdir.join(format!("temp{n}_label")), address),
                input_c: milli(r, "input"),
                max_c: milli(r, "max"),
                crit_c: milli(r, "crit"),
                highest_c: milli(r, "highest"),
                path: format!("/sys/bus/pci/devices/{address}/hwmon/{chip}"),
            });
        }
    }
    out
}
