//! What this machine must have for a lab, found or refused in one line each: virtme-ng, QEMU,
//! a stock kernel with its modules, the agent, and the accelerator that boots that kernel.

use std::path::{Path, PathBuf};

use crate::LabError;

/// Names a kernel image (`LINERATE_LAB_KERNEL=/boot/vmlinuz-...`) instead of the newest stock one.
pub const KERNEL_ENV: &str = "LINERATE_LAB_KERNEL";
/// Names virtme-ng's `vng` instead of the one in `PATH` or the lab's virtual environment.
pub const VNG_ENV: &str = "LINERATE_LAB_VNG";
/// `tcg`, `kvm` or `auto` (the default: KVM where it can boot a stock kernel, else TCG).
pub const ACCEL_ENV: &str = "LINERATE_LAB_ACCEL";
/// Names the guest agent (`linerate-lab`) instead of the one beside the running program.
pub const AGENT_ENV: &str = "LINERATE_LAB_AGENT";
/// Where `scripts/setup-tests.sh` installs virtme-ng (a Python virtual environment).
pub const VENV: &str = "/opt/linerate-lab/venv";

/// The kernel modules a lab with soft-RoCE loads.
pub const RDMA_MODULES: &[&str] = &["rdma_rxe", "ib_uverbs", "rdma_ucm"];

/// A stock kernel for the guests: its image and its release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub image: PathBuf,
    pub release: String,
}

impl Kernel {
    /// The kernel named by `LINERATE_LAB_KERNEL`, else the newest `/boot/vmlinuz-*` whose
    /// modules are installed (`/lib/modules/RELEASE/modules.dep`).
    pub fn find() -> Result<Kernel, LabError> {
        if let Some(p) = std::env::var_os(KERNEL_ENV).filter(|v| !v.is_empty()) {
            let image = PathBuf::from(p);
            return Kernel::from_image(&image).ok_or_else(|| {
                LabError::Missing(format!(
                    "{KERNEL_ENV}={}: not a kernel image named vmlinuz-RELEASE with its modules in /lib/modules/RELEASE",
                    image.display()
                ))
            });
        }
        let mut found: Vec<Kernel> = std::fs::read_dir("/boot")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| Kernel::from_image(&e.path()))
                    .collect()
            })
            .unwrap_or_default();
        found.sort_by_key(|k| version_key(&k.release));
        found.pop().ok_or_else(|| {
            LabError::Missing(
                "no kernel for the lab: /boot has no vmlinuz-RELEASE with modules in /lib/modules/RELEASE (scripts/setup-tests.sh installs Debian's linux-image-amd64)"
                    .into(),
            )
        })
    }

    fn from_image(image: &Path) -> Option<Kernel> {
        let name = image.file_name()?.to_str()?;
        let release = name.strip_prefix("vmlinuz-")?;
        let deps = Path::new("/lib/modules").join(release).join("modules.dep");
        (image.is_file() && deps.is_file()).then(|| Kernel {
            image: image.to_path_buf(),
            release: release.to_string(),
        })
    }

    /// Each of `modules` is built for this kernel (in its `modules.dep`, or built in), or the
    /// one line that says which is not.
    pub fn check_modules(&self, modules: &[&str]) -> Result<(), LabError> {
        let dir = Path::new("/lib/modules").join(&self.release);
        let deps = std::fs::read_to_string(dir.join("modules.dep")).unwrap_or_default();
        let builtin = std::fs::read_to_string(dir.join("modules.builtin")).unwrap_or_default();
        for m in modules {
            let file = format!("/{m}.ko");
            let has = |text: &str| {
                text.lines().any(|l| {
                    let path = l.split(':').next().unwrap_or("");
                    let base = path
                        .trim_end_matches(".xz")
                        .trim_end_matches(".zst")
                        .trim_end_matches(".gz");
                    base.ends_with(&file) || base.ends_with(&file.replace('_', "-"))
                })
            };
            if !has(&deps) && !has(&builtin) {
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
