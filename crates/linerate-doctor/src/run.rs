//! Running doctor: the order of its steps. Probe this host, measure memory and the disks, open
//! the far end (`crate::far`), watch the port's error counters (`crate::counters`) around the
//! network steps (`crate::steps`), then the rules (`crate::assemble`).

use std::time::Instant;

use linerate_facts::Inventory;
use linerate_proto::{Direction, TestKind, TestParams};
use linerate_results::DoctorReport;

use crate::assemble::{assemble, Assembly};
use crate::counters::CounterWatch;
use crate::far;
use crate::host::LiveHost;
use crate::local::{job_notes, measure_disks, measure_memory};
use crate::options::{DoctorError, DoctorOptions, FarEndNeeds, Progress, RdmaMode};
use crate::plan::plan;
use crate::steps::{self, Steps, ThisHost};

/// Run doctor. `progress` hears of each step as it begins and ends.
pub fn run(
    o: &DoctorOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<DoctorReport, DoctorError> {
    let t0 = Instant::now();
    let mut before = linerate_inventory::probe(&o.root)?;
    if o.root == std::path::Path::new("/") {
        crate::nfs::knock_unmounted(&mut before);
    }
    progress(Progress::Line("memory bandwidth"));
    let memory = measure_memory(before.host.cpus.len().max(1));
    let mut errors = Vec::new();
    let disks = measure_disks(&o.disks, o.depth, progress, &mut errors);
    let mut pyramid_notes: Vec<String> = disks.iter().flat_map(job_notes).collect();
    // The copy goes from disk to disk through the tested path: its source is written in a
    // directory of its own next to the first disk's, where the self-check's server also writes.
    let copy_dir = match o.disks.first() {
        Some(d) if disks.iter().any(|r| r.error.is_none()) => tempfile::Builder::new()
            .prefix("linerate-doctor-")
            .tempdir_in(d)
            .map_err(|e| errors.push(format!("creating a directory in {}: {e}", d.display())))
            .ok(),
        _ => None,
    };
    // With `--ssh`, the far end starts now, and the tests go to it with its key.
    let mut opened = far::open(
        o,
        || far_end_needs(o, &before, copy_dir.is_some()),
        copy_dir.as_ref(),
    )?;
    let addr = opened.client.addr();
    let protocol = opened.client.protocol();
    let self_check = opened.self_check;
    let mut host = LiveHost::new(addr, self_check, o.bind);
    let far_end_here = host.far_end_here();
    // Each test counts the far end's processes found here, instead of looking for them again.
    opened.client.use_cpu_meter(host.cpu_meter().clone());
    let watch = host
        .route_interface(addr)
        .and_then(|n| CounterWatch::start(&o.root, &before, &n));
    let mut line = |s: &str| progress(Progress::Line(s));
    let mut steps = Steps::new(
        opened.client.as_mut(),
        &mut host,
        &mut line,
        o.depth,
        self_check,
    );
    steps.runs.errors = errors;
    steps.plan(&before)?;
    steps.discard_twins();
    let copy = copy_dir
        .as_ref()
        .and_then(|dir| steps.copy(dir.path(), &mut pyramid_notes));
    if copy_dir.is_none() && !self_check && o.disks.is_empty() {
        pyramid_notes.push("no disk measured (doctor --disk PATH adds one, and a copy to the server's --write-dir)".into());
    }
    drop(copy_dir);
    steps.rdma(&o.rdma, &before);
    let mut runs = steps.runs;
    let far_version = opened.client.version();
    // The far end's work is done.
    drop(opened);
    let counter_deltas = match watch {
        Some(w) => {
            let (d, problems) = w.finish();
            runs.errors.extend(problems);
            d
        }
        None => Vec::new(),
    };
    Ok(assemble(
        Assembly {
            root: &o.root,
            server: addr,
            protocol,
            far_version,
            self_check,
            before: &before,
            memory: &memory,
            disks,
            copy,
            pyramid_notes,
            counter_deltas,
            far_end_here,
            seconds: t0.elapsed().as_secs_f64(),
        },
        runs,
    ))
}

/// Every test doctor may run against a server it starts (`--ssh`): the plan, the discard
/// twins its single streams may get, the copy (`copy`) and RDMA.
fn far_end_needs(o: &DoctorOptions, before: &Inventory, copy: bool) -> FarEndNeeds {
    let planned = plan(
        o.depth,
        true,
        linerate_proto::defaults::UDP_BITRATE_BPS,
        steps::multi_streams(before),
    );
    let twins: Vec<TestParams> = planned
        .iter()
        .filter(|t| t.kind == TestKind::TcpBw && t.streams == 1)
        .map(|t| TestParams {
            discard: true,
            ..t.clone()
        })
        .collect();
    let mut tests = planned;
    tests.extend(twins);
    if copy {
        tests.push(crate::plan::p(
            TestKind::FileTransfer,
            Direction::Send,
            1,
            steps::COPY_TIME_LIMIT_S,
            0.0,
        ));
    }
    if o.rdma != RdmaMode::Off {
        tests.push(crate::plan::p(
            TestKind::Rdma,
            Direction::Send,
            1,
            steps::rdma_secs(o.depth),
            0.0,
        ));
    }
    FarEndNeeds {
        tests,
        write_dir: copy,
    }
}
