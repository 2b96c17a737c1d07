//! What a lab is made of, as plain data, and the virtme-ng/QEMU command line of each guest
//! (pure: no I/O, unit-tested).

use std::fmt;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The virtio-serial port the guest agent listens on (`/sys/class/virtio-ports/*/name`).
pub const AGENT_PORT: &str = "linerate.lab";

/// The lab's addresses: 198.18.0.0/15 is the benchmarking range (RFC 2544).
pub const WIRE_NET: [u8; 3] = [198, 18, 0];

/// A lab: guests, and the wires between their NICs.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    pub guests: Vec<GuestSpec>,
}

/// One guest: a QEMU machine running the lab kernel on this machine's root, read-only.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestSpec {
    /// A short name (`a`, `b`): the agent's socket, the host name `lab-NAME`, the log.
    pub name: String,
    /// Virtual CPUs (under TCG each is one host thread).
    pub cpus: u32,
    /// Memory in MiB.
    pub memory_mib: u32,
    pub nics: Vec<NicSpec>,
    /// Soft-RoCE: an `rxe` device on every NIC that has an address (`rxe0`, `rxe1`, ...).
    pub rxe: bool,
}

/// One NIC of a guest.
#[derive(Debug, Clone, PartialEq)]
pub struct NicSpec {
    pub model: NicModel,
    /// The wire this NIC is plugged into: joined to the one other NIC on the same wire; `None`
    /// for a NIC with nothing at the other end (no carrier).
    pub wire: Option<String>,
    /// The MAC address: how the guest finds this NIC among its netdevs.
    pub mac: Mac,
    /// The PCIe root port the NIC sits behind; `None`: on the root complex itself.
    pub slot: Option<RootPort>,
    /// Its IPv4 address and prefix length, configured once the guest is up.
    pub addr: Option<(Ipv4Addr, u8)>,
    /// The netdev's MTU once the guest is up (`None`: the driver's default, 1500).
    pub mtu: Option<u32>,
}

/// What QEMU emulates for a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicModel {
    /// virtio-net (paravirtual), with the speed it reports in Mb/s (`None`: unknown, -1).
    Virtio { speed_mbps: Option<u32> },
    /// Intel 82574L (e1000e): an emulated PCIe NIC, not paravirtual; 1 Gb/s.
    E1000e,
}

/// A PCIe root port of QEMU's q35 machine with its link capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootPort {
    pub gen: SlotSpeed,
    pub width: u8,
}

/// A PCIe signalling rate QEMU's root port takes (`x-speed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotSpeed {
    Gt2_5,
    Gt5,
    Gt8,
    Gt16,
}

impl SlotSpeed {
    fn qemu(self) -> &'static str {
        match self {
            SlotSpeed::Gt2_5 => "2_5",
            SlotSpeed::Gt5 => "5",
            SlotSpeed::Gt8 => "8",
            SlotSpeed::Gt16 => "16",
        }
    }

    /// As `lspci -vv` and sysfs name it: `2.5`, `5.0`, `8.0`, `16.0` (GT/s).
    pub fn gts(self) -> f64 {
        match self {
            SlotSpeed::Gt2_5 => 2.5,
            SlotSpeed::Gt5 => 5.0,
            SlotSpeed::Gt8 => 8.0,
            SlotSpeed::Gt16 => 16.0,
        }
    }
}

impl std::str::FromStr for SlotSpeed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "2.5" | "2_5" | "gen1" => Ok(SlotSpeed::Gt2_5),
            "5" | "5.0" | "gen2" => Ok(SlotSpeed::Gt5),
            "8" | "8.0" | "gen3" => Ok(SlotSpeed::Gt8),
            "16" | "16.0" | "gen4" => Ok(SlotSpeed::Gt16),
            _ => Err(format!(
                "`{s}` is not a PCIe speed QEMU's root port takes: 2.5, 5, 8 or 16 (GT/s), or gen1-gen4"
            )),
        }
    }
}

/// A MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl Mac {
    /// A locally administered address in QEMU's prefix, from the guest's and NIC's index.
    pub fn lab(guest: usize, nic: usize) -> Mac {
        Mac([0x52, 0x54, 0x00, 0x1a, guest as u8, nic as u8])
    }
}

impl NicSpec {
    /// A NIC as `up --nic` takes it: `virtio[:SPEED_MBPS][@GTxWIDTH]` or `e1000e[@GTxWIDTH]`
    /// (`virtio:40000@5x4`: a virtio NIC reporting 40 Gb/s behind a PCIe 2.0 x4 root port).
    pub fn parse_short(s: &str) -> Result<(NicModel, Option<RootPort>), String> {
        let (model, slot) = match s.split_once('@') {
            Some((m, slot)) => (m, Some(slot)),
            None => (s, None),
        };
        let model = match model.split_once(':') {
            None if model == "virtio" => NicModel::Virtio { speed_mbps: None },
            None if model == "e1000e" => NicModel::E1000e,
            Some(("virtio", speed)) => NicModel::Virtio {
                speed_mbps: Some(speed.parse().ok().filter(|v| *v > 0).ok_or_else(|| {
                    format!("NIC `{s}`: the speed `{speed}` is not a number of Mb/s")
                })?),
            },
            _ => {
                return Err(format!(
                    "NIC `{s}`: expected virtio[:SPEED_MBPS][@GTxWIDTH] or e1000e[@GTxWIDTH]"
                ))
            }
        };
        let slot = match slot {
            None => None,
            Some(slot) => {
                let (g, w) = slot.split_once('x').ok_or_else(|| {
                    format!("NIC `{s}`: the slot `{slot}` is not GTxWIDTH, like 5x4")
                })?;
                let width = w
                    .parse()
                    .map_err(|_| format!("NIC `{s}`: the width `{w}` is not a number"))?;
                Some(RootPort {
                    gen: g.parse()?,
                    width,
                })
            }
        };
        Ok((model, slot))
    }
}

impl LabSpec {
    /// `guests` guests (1 or 2, named a and b), each with the NICs given (`(model, slot)`):
    /// with two guests NIC i of a is wired to NIC i of b; with one, its NICs are wired in pairs
    /// to each other (0 with 1, 2 with 3), an odd last one to nothing. NIC i of guest g has
    /// 198.18.i.(g+1)/24; with `rxe`, each gets a soft-RoCE device.
    pub fn build(guests: usize, nics: &[(NicModel, Option<RootPort>)], rxe: bool) -> LabSpec {
        let names = ["a", "b"];
        let guests = guests.clamp(1, 2);
        LabSpec {
            guests: (0..guests)
                .map(|gi| GuestSpec {
                    name: names[gi].to_string(),
                    cpus: 1,
                    memory_mib: 1024,
                    rxe,
                    nics: nics
                        .iter()
                        .enumerate()
                        .map(|(ni, (model, slot))| {
                            let wire = if guests == 2 {
                                Some(format!("w{ni}"))
                            } else if ni % 2 == 1 || ni + 1 < nics.len() {
                                Some(format!("w{}", ni / 2))
                            } else {
                                None
                            };
                            NicSpec {
                                model: *model,
                                wire,
                                mac: Mac::lab(gi, ni),
                                slot: *slot,
                                addr: Some((
                                    Ipv4Addr::new(WIRE_NET[0], WIRE_NET[1], ni as u8, gi as u8 + 1),
                                    24,
                                )),
                                mtu: None,
                            }
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Two guests, `a` (198.18.0.1) and `b` (198.18.0.2), each with one virtio NIC reporting
    /// 40 Gb/s behind a PCIe 2.0 x4 root port, joined by one wire, each with its own soft-RoCE
    /// device (`rxe0`) on that NIC: two hosts and a cable.
    pub fn pair() -> LabSpec {
        let guest = |i: usize, name: &str| GuestSpec {
            name: name.to_string(),
            cpus: 1,
            memory_mib: 1024,
            nics: vec![NicSpec {
                model: NicModel::Virtio {
                    speed_mbps: Some(40_000),
                },
                wire: Some("w0".to_string()),
                mac: Mac::lab(i, 0),
                slot: Some(RootPort {
                    gen: SlotSpeed::Gt5,
                    width: 4,
                }),
                addr: Some((
                    Ipv4Addr::new(WIRE_NET[0], WIRE_NET[1], WIRE_NET[2], i as u8 + 1),
                    24,
                )),
                mtu: None,
            }],
            rxe: true,
        };
        LabSpec {
            guests: vec![guest(0, "a"), guest(1, "b")],
        }
    }

    /// One guest, `a`, with the given NICs and nothing else.
    pub fn single(nics: Vec<NicSpec>, rxe: bool) -> LabSpec {
        LabSpec {
            guests: vec![GuestSpec {
                name: "a".to_string(),
                cpus: 1,
                memory_mib: 1024,
                nics,
                rxe,
            }],
        }
    }

    /// The spec is one a lab can be built from: names unique and short, each wire joining
    /// exactly two NICs of different guests or of one, MACs unique, sizes sane.
    pub fn check(&self) -> Result<(), String> {
        if self.guests.is_empty() {
            return Err("a lab needs at least one guest".into());
        }
        let mut names = std::collections::BTreeSet::new();
        let mut macs = std::collections::BTreeSet::new();
        let mut wires = std::collections::BTreeMap::<&str, usize>::new();
        for g in &self.guests {
            let ok = !g.name.is_empty()
                && g.name.len() <= 8
                && g.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !ok {
                return Err(format!(
                    "guest name `{}`: expected 1-8 lower-case letters or digits",
                    g.name
                ));
            }
            if !names.insert(&g.name) {
                return Err(format!("guest name `{}` is used twice", g.name));
            }
            if !(1..=8).contains(&g.cpus) {
                return Err(format!("guest {}: {} CPUs, expected 1-8", g.name, g.cpus));
            }
            if !(256..=16_384).contains(&g.memory_mib) {
                return Err(format!(
                    "guest {}: {} MiB of memory, expected 256-16384",
                    g.name, g.memory_mib
                ));
            }
            for n in &g.nics {
                if !macs.insert(n.mac.0) {
                    return Err(format!("MAC {} is used twice", n.mac));
                }
                if let Some(s) = n.slot {
                    if ![1, 2, 4, 8, 16].contains(&s.width) {
                        return Err(format!(
                            "guest {}: root port width x{}: expected 1, 2, 4, 8 or 16",
                            g.name, s.width
                        ));
                    }
                }
                if let Some(m) = n.mtu {
                    if !(576..=9000).contains(&m) {
                        return Err(format!("guest {}: MTU {m}: expected 576-9000", g.name));
                    }
                }
                if let Some(w) = &n.wire {
                    *wires.entry(w.as_str()).or_default() += 1;
                }
            }
        }
        for (w, n) in wires {
            if n != 2 {
                return Err(format!(
                    "wire `{w}` has {n} NIC(s) plugged in: a wire joins exactly two"
                ));
            }
        }
        Ok(())
    }

    /// The guest and NIC index at the other end of `wire` from (`guest`, `nic`).
    fn peer(&self, guest: usize, nic: usize) -> Option<(usize, usize)> {
        let wire = self.guests[guest].nics[nic].wire.as_deref()?;
        self.guests.iter().enumerate().find_map(|(gi, g)| {
            g.nics.iter().enumerate().find_map(|(ni, n)| {
                ((gi, ni) != (guest, nic) && n.wire.as_deref() == Some(wire)).then_some((gi, ni))
            })
        })
    }
}

/// The socket of one wire end: a datagram socket QEMU binds and sends to its peer's.
pub fn wire_socket(dir: &Path, guest: usize, nic: usize) -> PathBuf {
    dir.join(format!("w{guest}.{nic}.sock"))
}

/// The host end of guest `name`'s agent port: a socket the harness listens on and QEMU
/// connects to when it starts.
pub fn agent_socket(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.agent.sock"))
}

/// Where the host and the guest both see guest `name`'s scratch directory (read-write).
pub fn scratch_dir(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// How a guest's machine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// `vng` (virtme-ng).
    pub vng: PathBuf,
    /// The kernel image (`/boot/vmlinuz-VERSION`).
    pub kernel: PathBuf,
    /// Under KVM, not TCG.
    pub kvm: bool,
    /// The agent program as the guest sees it (the same path as on the host: the guest's
    /// root is this machine's).
    pub agent: PathBuf,
    /// The agent ends itself (and so the guest) after this many seconds whatever happens.
    pub max_life_s: u64,
}

/// The QEMU options of guest `gi`'s devices: its NICs (behind root ports where asked), the
/// wires as datagram sockets in `dir`, and the agent's virtio-serial port.
pub fn qemu_opts(spec: &LabSpec, gi: usize, dir: &Path) -> Vec<String> {
    let g = &spec.guests[gi];
    let mut o = Vec::new();
    for (ni, n) in g.nics.iter().enumerate() {
        let bus = match n.slot {
            Some(s) => {
                // Chassis and slot numbers only need to be unique within the guest.
                let id = format!("lrp{ni}");
                o.push("-device".into());
                o.push(format!(
                    "pcie-root-port,id={id},bus=pcie.0,chassis={c},slot={c},x-speed={},x-width={}",
                    s.gen.qemu(),
                    s.width,
                    c = 10 + ni
                ));
                id
            }
            None => "pcie.0".to_string(),
        };
        let netdev = format!("lnet{ni}");
        o.push("-netdev".into());
        o.push(match spec.peer(gi, ni) {
            Some((pg, pn)) => format!(
                "dgram,id={netdev},local.type=unix,local.path={},remote.type=unix,remote.path={}",
                wire_socket(dir, gi, ni).display(),
                wire_socket(dir, pg, pn).display()
            ),
            // A hub port alone on its hub: a NIC with nothing at the other end.
            None => format!("hubport,id={netdev},hubid={}", 100 + ni),
        });
        let device = match n.model {
            NicModel::Virtio { speed_mbps } => {
                let mut d = format!("virtio-net-pci,netdev={netdev},bus={bus},mac={}", n.mac);
                if let Some(s) = speed_mbps {
                    let _ = write!(d, ",speed={s},duplex=full");
                }
                if let Some(m) = n.mtu {
                    let _ = write!(d, ",host_mtu={m}");
                }
                d
            }
            NicModel::E1000e => format!("e1000e,netdev={netdev},bus={bus},mac={}", n.mac),
        };
        o.push("-device".into());
        o.push(device);
    }
    o.push("-chardev".into());
    o.push(format!(
        "socket,id=lagent,path={}",
        agent_socket(dir, &g.name).display()
    ));
    o.push("-device".into());
    o.push("virtio-serial-pci,id=lagentbus".into());
    o.push("-device".into());
    o.push(format!(
        "virtserialport,bus=lagentbus.0,chardev=lagent,name={AGENT_PORT}"
    ));
    o
}

/// The whole `vng` command line of guest `gi`.
pub fn vng_args(spec: &LabSpec, gi: usize, dir: &Path, launch: &Launch) -> Vec<String> {
    let g = &spec.guests[gi];
    let mut a = vec![
        "--run".to_string(),
        launch.kernel.display().to_string(),
        "--name".into(),
        format!("lab-{}", g.name),
        "--cpus".into(),
        g.cpus.to_string(),
        "--memory".into(),
        format!("{}M", g.memory_mib),
        // The guest's scratch, read-write, at the same path as on the host.
        format!("--rwdir={}", scratch_dir(dir, &g.name).display()),
        // Our own NICs only: no user-mode network to the outside world.
        "--no-dhcp".into(),
        // The guest kernel's console into the guest's log (vng's standard error), at warning
        // level and above: a guest that goes away leaves its oops, OOM kill or panic there.
        "--verbose".into(),
        "--append".into(),
        "loglevel=4".into(),
    ];
    if !launch.kvm {
        a.push("--disable-kvm".into());
    }
    a.push(format!(
        "--qemu-opts={}",
        shlex_join(&qemu_opts(spec, gi, dir))
    ));
    let agent = [
        launch.agent.display().to_string(),
        "agent".into(),
        "--port".into(),
        AGENT_PORT.into(),
        "--max-life".into(),
        launch.max_life_s.to_string(),
    ];
    a.push("--exec".into());
    a.push(shlex_join(&agent));
    a
}

fn shlex_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), std::borrow::Cow::into_owned))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            vng: "/usr/local/bin/vng".into(),
            kernel: "/boot/vmlinuz-6.1.0-56-amd64".into(),
            kvm: false,
            agent: "/repo/target/debug/linerate-lab".into(),
            max_life_s: 3600,
        }
    }

    #[test]
    fn the_pair_is_two_guests_on_one_wire_with_their_own_addresses() {
        let s = LabSpec::pair();
        s.check().unwrap();
        assert_eq!(s.peer(0, 0), Some((1, 0)));
        assert_eq!(s.peer(1, 0), Some((0, 0)));
        assert_ne!(s.guests[0].nics[0].addr, s.guests[1].nics[0].addr);
    }

    #[test]
    fn each_wire_end_sends_to_the_other_ones_socket() {
        let s = LabSpec::pair();
        let dir = Path::new("/tmp/lab");
        let a = qemu_opts(&s, 0, dir).join(" ");
        let b = qemu_opts(&s, 1, dir).join(" ");
        assert!(
            a.contains(
                "local.path=/tmp/lab/w0.0.sock,remote.type=unix,remote.path=/tmp/lab/w1.0.sock"
            ),
            "{a}"
        );
        assert!(
            b.contains(
                "local.path=/tmp/lab/w1.0.sock,remote.type=unix,remote.path=/tmp/lab/w0.0.sock"
            ),
            "{b}"
        );
        assert!(
            a.contains("pcie-root-port,id=lrp0,bus=pcie.0,chassis=10,slot=10,x-speed=5,x-width=4"),
            "{a}"
        );
        assert!(a.contains("virtio-net-pci,netdev=lnet0,bus=lrp0,mac=52:54:00:1a:00:00,speed=40000,duplex=full"), "{a}");
        assert!(
            a.contains("socket,id=lagent,path=/tmp/lab/a.agent.sock"),
            "{a}"
        );
        assert!(a.contains("name=linerate.lab"), "{a}");
    }

    #[test]
    fn the_vng_command_runs_the_agent_under_tcg_unless_told_otherwise() {
        let s = LabSpec::pair();
        let args = vng_args(&s, 0, Path::new("/tmp/lab"), &launch());
        assert!(args.contains(&"--disable-kvm".to_string()));
        assert!(args.contains(&"--rwdir=/tmp/lab/a".to_string()));
        let exec = args.iter().position(|a| a == "--exec").unwrap();
        assert_eq!(
            args[exec + 1],
            "/repo/target/debug/linerate-lab agent --port linerate.lab --max-life 3600"
        );
        let kvm = Launch {
            kvm: true,
            ..launch()
        };
        assert!(
            !vng_args(&s, 0, Path::new("/tmp/lab"), &kvm).contains(&"--disable-kvm".to_string())
        );
    }

    #[test]
    fn a_nic_without_a_wire_sits_alone_on_a_hub_and_an_e1000e_is_named() {
        let s = LabSpec::single(
            vec![NicSpec {
                model: NicModel::E1000e,
                wire: None,
                mac: Mac::lab(0, 1),
                slot: Some(RootPort {
                    gen: SlotSpeed::Gt2_5,
                    width: 1,
                }),
                addr: None,
                mtu: None,
            }],
            false,
        );
        s.check().unwrap();
        let o = qemu_opts(&s, 0, Path::new("/d")).join(" ");
        assert!(o.contains("hubport,id=lnet0,hubid=100"), "{o}");
        assert!(
            o.contains("e1000e,netdev=lnet0,bus=lrp0,mac=52:54:00:1a:00:01"),
            "{o}"
        );
        assert!(o.contains("x-speed=2_5,x-width=1"), "{o}");
    }

    #[test]
    fn nics_are_parsed_as_up_takes_them_and_wired_by_guest_count() {
        let (m, slot) = NicSpec::parse_short("virtio:40000@5x4").unwrap();
        assert_eq!(
            m,
            NicModel::Virtio {
                speed_mbps: Some(40_000)
            }
        );
        assert_eq!(
            slot,
            Some(RootPort {
                gen: SlotSpeed::Gt5,
                width: 4
            })
        );
        assert_eq!(
            NicSpec::parse_short("e1000e").unwrap(),
            (NicModel::E1000e, None)
        );
        for bad in [
            "virtio:fast",
            "rtl8139",
            "e1000e@5",
            "virtio@7x4",
            "virtio@5xfour",
        ] {
            assert!(NicSpec::parse_short(bad).is_err(), "{bad}");
        }
        let nics = [
            NicSpec::parse_short("virtio").unwrap(),
            NicSpec::parse_short("e1000e").unwrap(),
            NicSpec::parse_short("virtio").unwrap(),
        ];
        let one = LabSpec::build(1, &nics, true);
        one.check().unwrap();
        let wires: Vec<_> = one.guests[0].nics.iter().map(|n| n.wire.clone()).collect();
        assert_eq!(wires, [Some("w0".into()), Some("w0".into()), None]);
        let two = LabSpec::build(2, &nics, false);
        two.check().unwrap();
        assert_eq!(two.peer(0, 2), Some((1, 2)));
        assert_eq!(
            two.guests[1].nics[1].addr,
            Some((Ipv4Addr::new(198, 18, 1, 2), 24))
        );
    }

    #[test]
    fn bad_specs_are_refused_naming_what_is_wrong() {
        let mut s = LabSpec::pair();
        s.guests[1].nics[0].wire = Some("w9".into());
        assert!(s.check().unwrap_err().contains("wire `w0` has 1 NIC(s)"));
        let mut s = LabSpec::pair();
        s.guests[1].name = "a".into();
        assert!(s.check().unwrap_err().contains("used twice"));
        let mut s = LabSpec::pair();
        s.guests[0].name = "A/../x".into();
        assert!(s.check().unwrap_err().contains("lower-case"));
        let mut s = LabSpec::pair();
        s.guests[0].nics[0].slot = Some(RootPort {
            gen: SlotSpeed::Gt5,
            width: 3,
        });
        assert!(s.check().unwrap_err().contains("x3"));
        assert!("7"
            .parse::<SlotSpeed>()
            .unwrap_err()
            .contains("2.5, 5, 8 or 16"));
    }
}
