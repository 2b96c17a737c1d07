//! What this machine must have for a lab, found or refused in one line each: virtme-ng, QEMU,
//! a stock kernel with its modules, the agent, and the accelerator that boots that kernel.

use std::path::{Path, PathBuf};

use crate::LabError;

/// Names the kernel a lab boots when its caller names none: a series (`6.12`: the newest
/// installed `6.12.*`), a release (`6.1.0-57-amd64`) or an image (`/boot/vmlinuz-...`).
pub const KERNEL_ENV: &str = "LINERATE_LAB_KERNEL";
/// The kernels the kernel-reading lab tests boot, each in turn: a comma-separated list of
/// names as [`KERNEL_ENV`] takes them (`LINERATE_LAB_KERNELS=5.10,6.1,6.12`, the default:
/// [`KERNEL_SERIES`]).
pub const KERNELS_ENV: &str = "LINERATE_LAB_KERNELS";
/// Names virtme-ng's `vng` instead of the one in `PATH` or the lab's virtual environment.
pub const VNG_ENV: &str = "LINERATE_LAB_VNG";
/// `tcg`, `kvm` or `auto` (the default: KVM where it can boot a stock kernel, else TCG).
pub const ACCEL_ENV: &str = "LINERATE_LAB_ACCEL";
/// Names the guest agent (`linerate-lab`) instead of the one beside the running program.
pub const AGENT_ENV: &str = "LINERATE_LAB_AGENT";
/// Where `scripts/setup-tests.sh` installs virtme-ng (a Python virtual environment).
pub const VENV: &str = "/opt/linerate-lab/venv";

/// The kernels the lab is tested on, oldest first, each a Debian stock kernel that
/// `scripts/setup-tests.sh` installs beside the others: Debian 11's (bullseye), Debian 12's
/// (`linux-image-amd64`) and Debian 12's backports' (docs/lab.md, "The kernels").
pub const KERNEL_SERIES: &[&str] = &["5.10", "6.1", "6.12"];
/// The kernel a lab boots when nothing names one: Debian 12's own, the one this machine's
/// distribution installs as `linux-image-amd64` (else the newest installed).
pub const DEFAULT_KERNEL: &str = "6.1";

/// The kernel modules a lab with soft-RoCE loads.
pub const RDMA_MODULES: &[&str] = &["rdma_rxe", "ib_uverbs", "rdma_ucm"];

/// Where kernel images and their modules are.
const BOOT: &str = "/boot";
const MODULES: &str = "/lib/modules";

/// A stock kernel for the guests: its image and its release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub image: PathBuf,
    pub release: String,
}

impl Kernel {
    /// The kernel named by `LINERATE_LAB_KERNEL`, else [`DEFAULT_KERNEL`] when it is
    /// installed, else the newest installed one.
    pub fn find() -> Result<Kernel, LabError> {
        match std::env::var(KERNEL_ENV) {
            Ok(name) if !name.is_empty() => Kernel::named(&name).map_err(|e| match e {
                LabError::Missing(why) => LabError::Missing(format!("{KERNEL_ENV}={name}: {why}")),
                other => other,
            }),
            _ => {
                let installed = Kernel::installed();
                pick(&installed, DEFAULT_KERNEL)
                    .or_else(|| installed.last().cloned())
                    .ok_or_else(|| {
                        LabError::Missing(format!(
                            "no kernel for the lab: {BOOT} has no vmlinuz-RELEASE with modules in {MODULES}/RELEASE (scripts/setup-tests.sh installs Debian's linux-image-amd64)"
                        ))
                    })
            }
        }
    }

    /// The kernel `name` names: a series (`5.10`, `6.1`, `6.12`: the newest installed release
    /// of it), a release (`6.1.0-57-amd64`) or an image path (`/boot/vmlinuz-6.1.0-57-amd64`).
    pub fn named(name: &str) -> Result<Kernel, LabError> {
        if name.contains('/') {
            let image = PathBuf::from(name);
            return Kernel::from_image(&image, Path::new(MODULES)).ok_or_else(|| {
                LabError::Missing(format!(
                    "{name}: not a kernel image named vmlinuz-RELEASE with its modules in {MODULES}/RELEASE"
                ))
            });
        }
        let installed = Kernel::installed();
        pick(&installed, name).ok_or_else(|| {
            let have: Vec<&str> = installed.iter().map(|k| k.release.as_str()).collect();
            LabError::Missing(format!(
                "the lab kernel {name} is not installed (installed: {}; scripts/setup-tests.sh installs {})",
                if have.is_empty() { "none".to_string() } else { have.join(", ") },
                KERNEL_SERIES.join(", ")
            ))
        })
    }

    /// Every kernel in `/boot` whose modules are installed, oldest first.
    pub fn installed() -> Vec<Kernel> {
        installed_in(Path::new(BOOT), Path::new(MODULES))
    }

    /// `5.10` of `5.10.0-46-amd64`, `6.12` of `6.12.95+deb12-amd64`.
    pub fn series(&self) -> String {
        series_of(&self.release)
    }

    fn from_image(image: &Path, modules: &Path) -> Option<Kernel> {
        let name = image.file_name()?.to_str()?;
        let release = name.strip_prefix("vmlinuz-")?;
        let deps = modules.join(release).join("modules.dep");
        (image.is_file() && deps.is_file()).then(|| Kernel {
            image: image.to_path_buf(),
            release: release.to_string(),
        })
    }

    /// Each of `modules` is built for this kernel (in its `modules.dep`, or built in), or the
    /// one line that says which is not.
    pub fn check_modules(&self, modules: &[&str]) -> Result<(), LabError> {
        let dir = Path::new(MODULES).join(&self.release);
        let deps = std::fs::read_to_string(dir.join("modules.dep")).unwrap_or_default();
        let builtin = std::fs::read_to_string(dir.join("modules.builtin")).unwrap_or_default();
        for m in modules {
            if !has_module(&deps, m) && !has_module(&builtin, m) {
                return Err(LabError::Missing(format!(
                    "the lab kernel {} has no module {m} (not in {}/modules.dep)",
                    self.release,
                    dir.display()
                )));
            }
        }
        Ok(())
    }
}

/// `modules.dep` or `modules.builtin` lists module `m` (`rdma_rxe`: `.../rdma_rxe.ko`, or
/// compressed, `.ko.xz` as 6.12 ships them; a dash for an underscore).
fn has_module(list: &str, m: &str) -> bool {
    let file = format!("/{m}.ko");
    list.lines().any(|l| {
        let path = l.split(':').next().unwrap_or("");
        let base = path
            .trim_end_matches(".xz")
            .trim_end_matches(".zst")
            .trim_end_matches(".gz");
        base.ends_with(&file) || base.ends_with(&file.replace('_', "-"))
    })
}

/// The kernels in `boot` with modules in `modules`, oldest first.
fn installed_in(boot: &Path, modules: &Path) -> Vec<Kernel> {
    let mut found: Vec<Kernel> = std::fs::read_dir(boot)
        .map(|d| {
            d.flatten()
                .filter_map(|e| Kernel::from_image(&e.path(), modules))
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|k| version_key(&k.release));
    found
}

/// The kernel of `installed` (oldest first) that `name` names: its release exactly, else the
/// newest of the series (`6.1` is `6.1.*`, not `6.12.*`).
fn pick(installed: &[Kernel], name: &str) -> Option<Kernel> {
    installed
        .iter()
        .find(|k| k.release == name)
        .or_else(|| {
            installed
                .iter()
                .rev()
                .find(|k| series_of(&k.release) == name)
        })
        .cloned()
}

/// The major and minor numbers of a kernel release.
fn series_of(release: &str) -> String {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => format!("{a}.{b}"),
        _ => release.to_string(),
    }
}

/// The kernels `LINERATE_LAB_KERNELS` names (each as [`Kernel::named`] takes it), in its
/// order; [`KERNEL_SERIES`] when it is unset or empty. A name twice is taken once.
pub fn kernel_names() -> Vec<String> {
    parse_kernel_list(&std::env::var(KERNELS_ENV).unwrap_or_default())
}

fn parse_kernel_list(v: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for n in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    if names.is_empty() {
        KERNEL_SERIES.iter().map(|s| (*s).to_string()).collect()
    } else {
        names
    }
}

/// The kernel-reading lab tests (the CLI's test binaries), in the order the rotation
/// ([`rotation`]) gives them their kernels.
pub const ROTATED: [&str; 5] = [
    "lab_probe",
    "lab_stack",
    "lab_rdma",
    "lab_faults",
    "lab_soak",
];

/// The kernel whose guests boot slowest: Debian 11's, whose guests wait out udev's 300 s
/// settle (systemd-udevd 252 of this machine's root, on that kernel's 9p, does not answer
/// `udevadm settle` while it works through the coldplug), so each of its boots takes 6 minutes
/// or more.
pub const SLOW_KERNEL: &str = "5.10";

/// The kernels test binary `test` (`lab_probe`, `lab_stack`, ...) boots, in turn:
/// `LINERATE_LAB_KERNELS` when it is set (every test on each kernel it names); else
/// [`rotation`] on today's UTC day.
pub fn kernels_for(test: &str) -> Vec<String> {
    if std::env::var(KERNELS_ENV).is_ok_and(|v| !v.trim().is_empty()) {
        return kernel_names();
    }
    let day = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    rotation(test, day)
}

/// The kernel each test of [`ROTATED`] runs on on day `day` (days since 1970): one a run, so
/// the suite stays within its time. Every day one of them (its place in [`ROTATED`] is the
/// day's number modulo 5) runs on [`SLOW_KERNEL`], whose boot alone takes minutes; the others
/// on 6.1 or 6.12, alternating by day and place, so that every run boots all three kernels
/// and every test meets each kernel within ten days (5.10 every fifth day). A test not in
/// [`ROTATED`] gets every tested kernel.
pub fn rotation(test: &str, day: u64) -> Vec<String> {
    let Some(place) = ROTATED.iter().position(|t| *t == test) else {
        return KERNEL_SERIES.iter().map(|k| (*k).to_string()).collect();
    };
    let place = place as u64;
    let fast: Vec<&str> = KERNEL_SERIES
        .iter()
        .copied()
        .filter(|k| *k != SLOW_KERNEL)
        .collect();
    let kernel = if day % ROTATED.len() as u64 == place {
        SLOW_KERNEL
    } else {
        fast[usize::try_from((day + place) % fast.len() as u64).unwrap_or(0)]
    };
    vec![kernel.to_string()]
}

/// A kernel release as numbers for ordering (`6.1.0-56-amd64` → [6, 1, 0, 56]).
fn version_key(release: &str) -> Vec<u64> {
    release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A program by its name in `PATH`.
pub fn in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// virtme-ng's `vng`: `LINERATE_LAB_VNG`, else the lab's virtual environment, else `PATH`.
pub fn find_vng() -> Result<PathBuf, LabError> {
    if let Some(p) = std::env::var_os(VNG_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(LabError::Missing(format!(
                "{VNG_ENV}={}: no such file",
                p.display()
            )))
        };
    }
    let venv = Path::new(VENV).join("bin/vng");
    if venv.is_file() {
        return Ok(venv);
    }
    in_path("vng").ok_or_else(|| {
        LabError::Missing(format!(
            "virtme-ng (vng) not found in {VENV} or PATH (scripts/setup-tests.sh installs it from PyPI)"
        ))
    })
}

/// QEMU for x86-64 guests, which vng runs.
pub fn check_qemu() -> Result<PathBuf, LabError> {
    in_path("qemu-system-x86_64").ok_or_else(|| {
        LabError::Missing(
            "qemu-system-x86_64 not found (scripts/setup-tests.sh installs Debian's qemu-system-x86)"
                .into(),
        )
    })
}

/// The guest agent: `LINERATE_LAB_AGENT`, else `linerate-lab` beside the running program or
/// one directory up (a test binary runs from `target/PROFILE/deps/`).
pub fn find_agent() -> Result<PathBuf, LabError> {
    if let Some(p) = std::env::var_os(AGENT_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()
        .map_err(|e| LabError::Missing(format!("this program's path: {e}")))?;
    let mut dirs = exe.ancestors().skip(1).take(2);
    dirs.find_map(|d| {
        let p = d.join("linerate-lab");
        p.is_file().then_some(p)
    })
    .ok_or_else(|| {
        LabError::Missing(format!(
            "the guest agent linerate-lab is not built beside {} (cargo build -p linerate-lab, or set {AGENT_ENV})",
            exe.display()
        ))
    })
}

/// Which accelerator the guests run under, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accel {
    pub kvm: bool,
    pub why: String,
}

/// KVM where this machine has one that boots a stock kernel, else TCG (QEMU's emulator):
/// `LINERATE_LAB_ACCEL=tcg|kvm|auto` decides, `auto` by looking. A paravirtual KVM
/// (`kvm_pvm`) runs PVM-enabled guest kernels only: Debian's stock kernel hangs under it.
pub fn choose_accel() -> Result<Accel, LabError> {
    let asked = std::env::var(ACCEL_ENV).unwrap_or_default();
    match asked.as_str() {
        "tcg" => Ok(Accel {
            kvm: false,
            why: format!("{ACCEL_ENV}=tcg"),
        }),
        "kvm" => Ok(Accel {
            kvm: true,
            why: format!("{ACCEL_ENV}=kvm"),
        }),
        "" | "auto" => Ok(auto_accel(
            Path::new("/sys/module"),
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/kvm")
                .is_ok(),
        )),
        other => Err(LabError::Missing(format!(
            "{ACCEL_ENV}={other}: expected tcg, kvm or auto"
        ))),
    }
}

fn auto_accel(modules: &Path, dev_kvm_usable: bool) -> Accel {
    let loaded = |m: &str| modules.join(m).exists();
    if loaded("kvm_pvm") {
        Accel {
            kvm: false,
            why: "TCG: this machine's KVM is paravirtual (kvm_pvm), which runs PVM guest kernels only; a stock kernel hangs under it".into(),
        }
    } else if !dev_kvm_usable {
        Accel {
            kvm: false,
            why: "TCG: /dev/kvm cannot be opened read-write".into(),
        }
    } else if loaded("kvm_intel") || loaded("kvm_amd") {
        Accel {
            kvm: true,
            why: "KVM (kvm_intel or kvm_amd)".into(),
        }
    } else {
        Accel {
            kvm: false,
            why: "TCG: /dev/kvm is there but neither kvm_intel nor kvm_amd is loaded".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_order_by_their_numbers() {
        let mut v = vec!["6.1.0-9-amd64", "6.1.0-56-amd64", "5.10.0-30-amd64"];
        v.sort_by_key(|r| version_key(r));
        assert_eq!(v, ["5.10.0-30-amd64", "6.1.0-9-amd64", "6.1.0-56-amd64"]);
    }

    fn fake_boot(releases: &[&str]) -> (tempfile::TempDir, Vec<Kernel>) {
        let root = tempfile::tempdir().unwrap();
        let (boot, modules) = (root.path().join("boot"), root.path().join("modules"));
        std::fs::create_dir_all(&boot).unwrap();
        for r in releases {
            std::fs::write(boot.join(format!("vmlinuz-{r}")), "").unwrap();
            std::fs::create_dir_all(modules.join(r)).unwrap();
            std::fs::write(modules.join(r).join("modules.dep"), "").unwrap();
        }
        // An image without its modules is no kernel for the lab.
        std::fs::write(boot.join("vmlinuz-6.1.0-99-amd64"), "").unwrap();
        let k = installed_in(&boot, &modules);
        (root, k)
    }

    #[test]
    fn a_kernel_is_named_by_its_series_or_its_release() {
        let (_root, k) = fake_boot(&[
            "6.12.95+deb12-amd64",
            "6.1.0-57-amd64",
            "5.10.0-46-amd64",
            "6.1.0-9-amd64",
            "6.12.9+deb12-amd64",
        ]);
        let releases: Vec<&str> = k.iter().map(|k| k.release.as_str()).collect();
        assert_eq!(
            releases,
            [
                "5.10.0-46-amd64",
                "6.1.0-9-amd64",
                "6.1.0-57-amd64",
                "6.12.9+deb12-amd64",
                "6.12.95+deb12-amd64"
            ]
        );
        let named = |n: &str| pick(&k, n).map(|k| k.release);
        assert_eq!(named("6.1").as_deref(), Some("6.1.0-57-amd64"));
        assert_eq!(named("6.12").as_deref(), Some("6.12.95+deb12-amd64"));
        assert_eq!(named("5.10").as_deref(), Some("5.10.0-46-amd64"));
        assert_eq!(named("6.1.0-9-amd64").as_deref(), Some("6.1.0-9-amd64"));
        assert_eq!(named("5.15"), None);
        assert_eq!(named("6"), None);
        assert_eq!(k[0].series(), "5.10");
        assert_eq!(k[4].series(), "6.12");
    }

    #[test]
    fn the_kernel_list_is_the_tested_series_unless_named() {
        assert_eq!(parse_kernel_list(""), KERNEL_SERIES);
        assert_eq!(parse_kernel_list(" , "), KERNEL_SERIES);
        assert_eq!(parse_kernel_list("6.12, 5.10,6.12"), ["6.12", "5.10"]);
    }

    #[test]
    fn each_test_runs_on_one_kernel_a_day_and_meets_every_kernel() {
        assert_eq!(rotation("lab_mesh", 7), ["5.10", "6.1", "6.12"]);
        for day in 100..110 {
            let kernels: Vec<String> = ROTATED
                .iter()
                .map(|t| {
                    let k = rotation(t, day);
                    assert_eq!(k.len(), 1, "day {day}: {t} on {k:?}");
                    k[0].clone()
                })
                .collect();
            // One test a day on the slow kernel, and every kernel booted every day.
            assert_eq!(
                kernels.iter().filter(|k| *k == SLOW_KERNEL).count(),
                1,
                "day {day}: {kernels:?}"
            );
            for k in KERNEL_SERIES {
                assert!(
                    kernels.iter().any(|x| x == k),
                    "day {day}: no {k} in {kernels:?}"
                );
            }
        }
        // Within ten days every test runs on every kernel.
        for t in ROTATED {
            for k in KERNEL_SERIES {
                assert!(
                    (100..110).any(|d| rotation(t, d) == [k.to_string()]),
                    "{t} never runs on {k}"
                );
            }
        }
    }

    #[test]
    fn compressed_and_dashed_modules_are_found() {
        let dep = "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz: kernel/drivers/infiniband/core/ib_uverbs.ko.xz\nkernel/net/sched/sch-x.ko:\n";
        assert!(has_module(dep, "rdma_rxe"));
        assert!(has_module(dep, "sch_x"));
        assert!(
            !has_module(dep, "ib_uverbs"),
            "a dependency is not a module line"
        );
        assert!(!has_module(dep, "rxe"));
    }

    #[test]
    fn a_paravirtual_kvm_means_tcg_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kvm_pvm")).unwrap();
        let a = auto_accel(dir.path(), true);
        assert!(!a.kvm);
        assert!(a.why.contains("kvm_pvm"), "{}", a.why);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kvm_intel")).unwrap();
        assert!(auto_accel(dir.path(), true).kvm);
        assert!(!auto_accel(dir.path(), false).kvm);
    }
}
