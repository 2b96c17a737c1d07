//! The lab in the CLI's tests: guests of Debian's stock kernels under QEMU (crates/linerate-lab,
//! docs/lab.md). A machine without the lab's pieces records a skip (a failure in CI); any other
//! failure to boot fails the test with its one line. The tests that read the kernel run on each
//! kernel of `LINERATE_LAB_KERNELS` in turn ([`on_each_kernel`], [`boot_on`]); the others boot
//! the lab's default kernel ([`boot`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use linerate_lab::{Bg, Guest, Lab, LabError, LabSpec};
use serde_json::Value;

use super::BIN;

thread_local! {
    /// Inside [`on_each_kernel`]: why a kernel's lab could not be booted here, one line each.
    static MISSING: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// The kernels test binary `test` (`lab_probe`, `lab_stack`, ...) boots, in turn
/// (`linerate_lab::host::kernels_for`: `LINERATE_LAB_KERNELS`, else the rotation).
pub fn kernels(test: &str) -> Vec<String> {
    linerate_lab::host::kernels_for(test)
}

/// Run `test` (of test binary `binary`) once for each kernel of [`kernels`] (its name, for
/// [`boot_on`]), one after the other; every kernel is tried. The test fails after the last
/// one, naming each kernel it failed on and how; a kernel this machine cannot boot (not
/// installed, no QEMU) is one skip for the whole test, naming it (a failure in CI).
pub fn on_each_kernel(binary: &str, test: impl Fn(&str)) {
    let mut failed = Vec::new();
    MISSING.with(|m| *m.borrow_mut() = Some(Vec::new()));
    let kernels = kernels(binary);
    eprintln!("lab: {binary} on kernels {}", kernels.join(", "));
    for k in &kernels {
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| test(k)));
        let took = started.elapsed().as_secs_f64();
        match outcome {
            Ok(()) => eprintln!("lab: on kernel {k}: done in {took:.0} s"),
            Err(e) => {
                let why = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_else(|| "a panic without a message".into());
                eprintln!("lab: on kernel {k}: FAILED after {took:.0} s");
                failed.push(format!("on kernel {k}: {why}"));
            }
        }
    }
    let mut missing = MISSING.with(|m| m.borrow_mut().take()).unwrap_or_default();
    missing.dedup();
    assert!(
        failed.is_empty(),
        "failed on {} of {} kernel(s):\n{}",
        failed.len(),
        kernels.len(),
        failed.join("\n")
    );
    if !missing.is_empty() {
        linerate_testkit::skip(missing.join("; "));
    }
}

/// Boot `spec` on the lab's default kernel, one lab at a time across test processes; `None`
/// (after recording the skip) where this machine lacks what a lab needs.
pub fn boot(spec: &LabSpec) -> Option<(Lab, super::Serial)> {
    boot_with(spec, None)
}

/// [`boot`] on the kernel `kernel` names (`5.10`, `6.1`, `6.12`, a release or an image).
/// Inside [`on_each_kernel`], a kernel that cannot boot here is told to it, not skipped at once.
pub fn boot_on(kernel: &str, spec: &LabSpec) -> Option<(Lab, super::Serial)> {
    boot_with(spec, Some(kernel))
}

fn boot_with(spec: &LabSpec, kernel: Option<&str>) -> Option<(Lab, super::Serial)> {
    let serial = super::serial();
    let booted = match kernel {
        Some(k) => Lab::boot_named(spec, k),
        None => Lab::boot(spec),
    };
    match booted {
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
            let told = MISSING.with(|m| match m.borrow_mut().as_mut() {
                Some(list) => {
                    list.push(why.clone());
                    true
                }
                None => false,
            });
            if !told {
                linerate_testkit::skip(why);
            }
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

/// What `linerate serve` prints once it listens: the first line of its log
/// (`schemas/serve-log.schema.json`).
pub const LISTENING: &str = r#""event":"listening""#;

/// How long a server in a guest may take to say it listens: under TCG its first start reads
/// the binary over 9p, seconds on a busy machine.
pub const SERVE_READY: Duration = Duration::from_secs(120);

/// `linerate serve -B ADDR` in the background in `g`, once it listens.
pub fn serve(g: &Guest, addr: &str) -> Bg {
    serve_sh(g, &format!("exec {BIN} serve -B {addr}"))
}

/// `sh` (a command line that execs `linerate serve`) in the background in `g`, once the
/// server says it listens (its `listening` line, within [`SERVE_READY`]); the test fails
/// with what the server printed otherwise.
pub fn serve_sh(g: &Guest, sh: &str) -> Bg {
    g.spawn_ready(sh, LISTENING, SERVE_READY)
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
