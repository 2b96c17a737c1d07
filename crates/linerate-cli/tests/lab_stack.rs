//! The RDMA software stack on a real kernel (the lab, docs/lab.md): a guest with soft-RoCE and
//! every module and limit in place gives no stack finding; with `rdma_ucm` unloaded probe says
//! so and doctor skips its RDMA step naming it; with libfabric's providers filtered to `tcp`
//! probe says verbs is missing and why; an unprivileged user under the classic 64 KiB memlock
//! limit gets the finding, and `bench --rdma`'s registration fails naming the limit with its
//! figure. (`ib_uverbs` cannot be unloaded here: `rdma_rxe` depends on it; its finding is shown
//! on fixture trees.)

mod common;

use std::time::Duration;

use common::lab::{self, linerate_json, sh};
use common::BIN;
use linerate_lab::{Guest, LabSpec, NicSpec};
use serde_json::Value;

/// The stack's finding ids probe reported.
fn stack_findings(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| {
            let id = f["id"].as_str()?;
            let stack = id.starts_with("rdma.")
                || id.starts_with("ipoib.")
                || id.starts_with("nfs.")
                || id == "ib.no_opensm";
            stack.then(|| {
                (
                    id.to_string(),
                    f["message"].as_str().unwrap_or("").to_string(),
                )
            })
        })
        .collect()
}

/// Run `linerate ARGS` in `g` as an unprivileged user (nobody), in /tmp, under the classic 64 KiB
/// memlock limit when `low_memlock`.
fn as_nobody(g: &Guest, args: &str, low_memlock: bool) -> linerate_lab::Output {
    let limit = if low_memlock { "ulimit -l 64 && " } else { "" };
    g.run(
        &format!(
            "cd /tmp && {limit}exec setpriv --reuid=65534 --regid=65534 --clear-groups {BIN} {args}"
        ),
        Duration::from_secs(600),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The finding `id` of a document; the test fails naming the document otherwise.
fn finding<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {doc}"))
}

#[test]
fn the_rdma_stack_on_a_real_kernel() {
    lab::on_each_kernel("lab_stack", stack_on);
}

/// The test on one kernel (`LINERATE_LAB_KERNELS`).
fn stack_on(kernel: &str) {
    let nic = NicSpec::parse_short("virtio:40000@5x4").unwrap();
    let Some((lab, _serial)) = lab::boot_on(kernel, &LabSpec::build(1, &[nic], true)) else {
        return;
    };
    let g = lab.guest("a");
    let addr = g.addr(0).to_string();

    // Everything in place, as root: nothing to say.
    let doc = linerate_json(g, "probe --json", 120);
    assert_eq!(stack_findings(&doc), [], "{doc}");

    rdma_ucm_on_demand_and_blacklisted(g, &addr);
    libfabric_filtered(g);
    let serve = lab::serve(g, &addr);
    // An unprivileged user under 64 KiB of locked memory: probe says so, and bench's
    // registration fails naming the limit, with its figure.
    let o = as_nobody(g, "probe --json", true);
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    let found = stack_findings(&doc);
    assert!(
        found
            .iter()
            .any(|(id, m)| id == "rdma.memlock_low" && m.contains("may lock only 64 KiB")),
        "{found:?}"
    );
    let o = as_nobody(g, &format!("bench {addr} --rdma -t 1"), true);
    assert!(!o.success(), "{o:?}");
    assert!(
        o.stderr.contains("failed (Cannot allocate memory)")
            && o.stderr
                .contains("this process may lock at most 64 KiB of memory (RLIMIT_MEMLOCK"),
        "{}",
        o.stderr
    );
    // Root (CAP_IPC_LOCK) under the same limit is not limited.
    let o = g
        .run(
            &format!("ulimit -l 64 && {BIN} bench {addr} --rdma -t 1 -J"),
            Duration::from_secs(180),
        )
        .unwrap();
    assert!(o.success(), "{}", o.stderr);
    g.stop(serve, Duration::from_secs(5)).unwrap();
}

/// `rdma_ucm` unloaded is no fault (it loads on demand); blacklisted it is, and an unprivileged
/// doctor skips its RDMA step for it.
fn rdma_ucm_on_demand_and_blacklisted(g: &Guest, addr: &str) {
    // rdma_ucm unloaded: no fault, since the kernel loads it again when a program asks for
    // rdma_cm, for any user (rdma-core asks over RDMA netlink).
    sh(g, "rmmod rdma_ucm", 30);
    let o = as_nobody(g, "probe --json", false);
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    assert!(
        stack_findings(&doc)
            .iter()
            .all(|(id, _)| id != "rdma.no_rdma_cm"),
        "{doc}"
    );
    assert!(
        sh(g, "lsmod", 30).contains("rdma_ucm"),
        "an unprivileged probe's libfabric loaded rdma_ucm on demand"
    );
    // Kept from loading by modprobe.d: then it is a fault, said, and an unprivileged doctor
    // skips its RDMA step naming it.
    sh(
        g,
        "rmmod rdma_ucm && echo 'blacklist rdma_ucm' > /etc/modprobe.d/lab-blacklist.conf",
        30,
    );
    let o = as_nobody(g, "probe --json", false);
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    let f = finding(&doc, "rdma.no_rdma_cm");
    assert_eq!(f["severity"], "warning", "{f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("/etc/modprobe.d/lab-blacklist.conf keeps it from loading"),
        "{f}"
    );
    // The server as nobody too: run as root, its libfabric would load the module again.
    let serve = lab::serve_sh(
        g,
        &format!("exec setpriv --reuid=65534 --regid=65534 --clear-groups {BIN} serve -B {addr}"),
    );
    let o = as_nobody(
        g,
        &format!("doctor {addr} --quick --rdma-provider verbs --json"),
        false,
    );
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    let skipped = doc["far_end"]["skipped"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        skipped.iter().any(|s| {
            s["step"].as_str().unwrap_or("").starts_with("RDMA")
                && s["reason"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("the RDMA step was skipped: no /dev/infiniband/rdma_cm")
        }),
        "{doc}"
    );
    assert!(
        doc["tests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| !t["kind"].as_str().unwrap_or("").starts_with("rdma")),
        "no RDMA test ran: {doc}"
    );
    // The finding that stops it leads its severity.
    let first_warning = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["severity"] == "warning")
        .unwrap();
    assert!(
        first_warning["id"] == "rdma.no_rdma_cm" || first_warning["id"] == "rdma.memlock_low",
        "{doc}"
    );
    g.stop(serve, Duration::from_secs(5)).unwrap();
    sh(g, "rm /etc/modprobe.d/lab-blacklist.conf", 30);
    sh(g, "modprobe rdma_ucm", 30);
}

/// libfabric told to offer only tcp.
fn libfabric_filtered(g: &Guest) {
    // libfabric told to offer only tcp: verbs is missing, and the finding says why.
    let doc = linerate_json(g, "probe --json", 120);
    assert_eq!(stack_findings(&doc), [], "{doc}");
    let o = g
        .run_with(
            &format!("{BIN} probe --json"),
            &[("FI_PROVIDER", "tcp")],
            Duration::from_secs(120),
        )
        .unwrap();
    let doc: Value = serde_json::from_str(&o.stdout).unwrap();
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rdma.no_libfabric_verbs")
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(
        f["fix"].as_str().unwrap().contains("FI_PROVIDER=tcp"),
        "{f}"
    );
}
