//! The lab in the CLI's tests: guests of Debian's stock kernel under QEMU (crates/linerate-lab,
//! docs/lab.md). A machine without the lab's pieces records a skip (a failure in CI); any other
//! failure to boot fails the test with its one line.

use std::collections::BTreeMap;
use std::time::Duration;

use linerate_lab::{Bg, Guest, Lab, LabError, LabSpec};
use serde_json::Value;

use super::BIN;

/// Boot `spec`, one lab at a time across test processes; `None` (after recording the skip)
/// where this machine lacks what a lab needs.
pub fn boot(spec: &LabSpec) -> Option<(Lab, super::Serial)> {
    let serial = super::serial();
    match Lab::boot(spec) {
        Ok(lab) => {
            eprintln!(
                "lab: {} guest(s) up in {:.1} s, kernel {} ({})",
                lab.guests.len(),
                lab.boot_time.as_secs_f64(),
                lab.kernel.release,
                if lab.accel.kvm { "KVM" } else { "TCG" }
            );
            Some((lab, serial))
        }
        Err(LabError::Missing(why)) => {
            linerate_testkit::skip(why);
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Run `cmd` in `g` (at most `secs`): its standard output; the test fails with the guest's
/// one line if the command does.
pub fn sh(g: &Guest, cmd: &str, secs: u64) -> String {
    g.sh_within(cmd, Duration::from_secs(secs))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `linerate ARGS` in `g`: its output, whatever its status (`Output` has both).
pub fn linerate(g: &Guest, args: &str, secs: u64) -> linerate_lab::Output {
    g.run(&format!("{BIN} {args}"), Duration::from_secs(secs))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `linerate ARGS --json`-like output parsed; the test fails naming the command otherwise.
pub fn linerate_json(g: &Guest, args: &str, secs: u64) -> Value {
    let o = linerate(g, args, secs);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "linerate {args} in guest {}: not JSON ({e}); {}; stdout: {}; stderr: {}",
            g.name,
            o.status.describe(),
            o.stdout.chars().take(2000).collect::<String>(),
            o.stderr.chars().take(2000).collect::<String>()
        )
    })
}

/// `linerate serve -B ADDR` in the background in `g`.
pub fn serve(g: &Guest, addr: &str) -> Bg {
    g.spawn(&format!("exec {BIN} serve -B {addr}"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Stop `bg` in `g` (a server, for a failure's message): what it wrote, or why that could not
/// be had.
pub fn server_log(g: &Guest, bg: Bg) -> String {
    g.stop(bg, Duration::from_secs(5))
        .map_or_else(|e| e.to_string(), |o| format!("{}{}", o.stdout, o.stderr))
}

/// The hw_counters of RDMA device `dev` port 1 in guest `g`.
pub fn hw(g: &Guest, dev: &str) -> BTreeMap<String, u64> {
    let dir = format!("/sys/class/infiniband/{dev}/ports/1/hw_counters");
    sh(g, &format!("cd {dir} && grep -H . *"), 30)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// How far counter `name` rose from `before` to `after` (a counter absent is 0).
pub fn rose(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, name: &str) -> u64 {
    after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0)
}

/// The findings of `id` in a probe or doctor document.
pub fn findings<'a>(doc: &'a Value, id: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}
