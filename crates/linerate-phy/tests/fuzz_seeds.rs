//! Replays the `phy_decoders` fuzz seeds (`fuzz/seeds/phy_decoders/`) through the target's own
//! checks, so plain `cargo test` exercises every seed and every minimised crash kept there,
//! without cargo-fuzz or nightly. See `fuzz/README.md`.
//!
//! The seeds come from [`generated_seeds`]: the real modules' images of `fixtures/eeprom`
//! (flat, hex, as netlink replies, truncated), the replies the fixture trees hold under
//! `ethtool/`, and broken ones. After changing it, rewrite the files with
//! `cargo test -p linerate-phy --test fuzz_seeds -- --ignored write_seeds`.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use linerate_phy::eeprom::{self, Image};
use linerate_phy::{ethtool, ioctl, nl};

#[path = "../../../fuzz/src/phy.rs"]
mod checks;

const TARGET: &str = "phy_decoders";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn seed_dir() -> PathBuf {
    repo().join("fuzz/seeds").join(TARGET)
}

/// Seeds that reproduce a bug found by fuzzing and not fixed yet: (file, text the failure
/// contains). Each must still fail that way; once fixed, the entry goes.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

fn with(sel: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![sel];
    v.extend_from_slice(body);
    v
}

/// The flat bytes of an image of fixtures/eeprom (the flat ones only).
fn flat(name: &str) -> Vec<u8> {
    let text = fs::read_to_string(repo().join("fixtures/eeprom").join(name)).unwrap();
    text.lines()
        .filter(|l| l.starts_with("0x"))
        .flat_map(|l| {
            l.split_once(':')
                .unwrap()
                .1
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The image's halves as netlink replies in the order a live read asks, each a u16 length
/// and its bytes.
fn as_replies(img: &Image) -> Vec<u8> {
    let mut got = Image::default();
    let mut out = Vec::new();
    loop {
        let want = eeprom::plan(&got);
        let Some(r) = want.into_iter().next() else {
            break;
        };
        let data = img
            .reads()
            .into_iter()
            .find(|(h, _)| *h == r)
            .map_or(vec![0u8; eeprom::HALF], |(_, d)| d.to_vec());
        got.insert(r, &data).unwrap();
        let reply =
            ethtool::build::reply(27, ethtool::Get::ModuleEeprom, "eth0", &nl::attr(7, &data));
        out.extend_from_slice(&u16::try_from(reply.len()).unwrap().to_le_bytes());
        out.extend(reply);
    }
    out
}

/// The replies the fixture trees hold, by tree and file (module EEPROM halves excepted).
fn tree_replies() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut trees: Vec<PathBuf> = fs::read_dir(repo().join("fixtures/sysfs"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("ethtool"))
        .filter(|p| p.is_dir())
        .collect();
    trees.sort();
    for t in trees {
        let case = t
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut ifaces: Vec<PathBuf> = fs::read_dir(&t)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        ifaces.sort();
        for i in ifaces {
            let mut files: Vec<PathBuf> = fs::read_dir(&i)
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for f in files {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                if name == "statistics" {
                    continue;
                }
                out.push((
                    format!("{case}-{}-{name}", i.file_name().unwrap().to_string_lossy()),
                    fs::read(&f).unwrap(),
                ));
            }
        }
    }
    out
}

/// Every generated seed: (file name, bytes).
fn generated_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let flats = [
        "sff8472-flexoptix-p.b1696.10.da.hex",
        "sff8472-oem-sfp-10gb-lr-no-rx.hex",
        "sff8472-brocade-57-1000042-no-ddm.hex",
        "sff8636-fs-qsfp28-ir4-100g.hex",
        "sff8636-fs-q28-pcxx-dac.hex",
    ];
    for (i, name) in flats.iter().enumerate() {
        let raw = flat(name);
        let stem = name.trim_end_matches(".hex");
        out.push((format!("0{i}-flat-{stem}.bin"), with(0, &raw)));
        out.push((
            format!("0{i}-flat-{stem}-truncated.bin"),
            with(0, &raw[..raw.len() - 37]),
        ));
        out.push((
            format!("0{i}-netlink-{stem}.bin"),
            with(2, &as_replies(&Image::from_flat(&raw).unwrap())),
        ));
    }
    for name in [
        "cmis-arista-qdd-400g-xdr4.hex",
        "cmis-qsfp-dd-16-lane-low-power.hex",
    ] {
        let text = fs::read(repo().join("fixtures/eeprom").join(name)).unwrap();
        let stem = name.trim_end_matches(".hex");
        out.push((format!("1-hex-{stem}.bin"), with(1, &text)));
        out.push((
            format!("1-hex-{stem}-cut.bin"),
            with(1, &text[..text.len() / 2]),
        ));
        let img = Image::from_hex(&String::from_utf8_lossy(&text)).unwrap();
        out.push((format!("2-netlink-{stem}.bin"), with(2, &as_replies(&img))));
    }
    out.push(("0-blank-ff.bin".into(), with(0, &[0xff; 256])));
    out.push(("0-unknown-identifier.bin".into(), with(0, &[0x42; 256])));
    out.push(("1-hex-broken.bin".into(), with(1, b"0x0000: 03 04 zz\n")));
    for (name, bytes) in tree_replies() {
        let sel = if name.ends_with("-vfs") { 4 } else { 3 };
        out.push((format!("{sel}-tree-{name}.bin"), with(sel, &bytes)));
    }
    out.push((
        "3-refused-eopnotsupp.bin".into(),
        with(3, &nl::error_message(95, 1)),
    ));
    out.push(("3-garbage.bin".into(), with(3, &[0xff; 40])));
    let rings = ioctl::set_rings(&linerate_facts::Rings::default(), Some(4096), Some(512));
    out.push(("5-ioctl-rings.bin".into(), with(5, &rings)));
    out.push(("5-ioctl-short.bin".into(), with(5, &[1, 2, 3])));
    out
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(seed_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", seed_dir().display()))
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty());
    out
}

#[test]
fn phy_seeds() {
    let mut failed = Vec::new();
    let mut results = Vec::new();
    for (name, bytes) in seeds() {
        let known = KNOWN_FAILURES
            .iter()
            .find(|(f, _)| *f == name)
            .map(|(_, w)| *w);
        match (
            catch_unwind(AssertUnwindSafe(|| checks::check_phy(&bytes))),
            known,
        ) {
            (Ok(o), None) => results.push((name, o)),
            (Ok(_), Some(_)) => {
                failed.push(format!("{name}: passes now; remove it from KNOWN_FAILURES"));
            }
            (Err(p), known) => {
                let why = p
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                if known.is_none_or(|w| !why.contains(w)) {
                    failed.push(format!("{name}: {why}"));
                }
            }
        }
    }
    assert!(failed.is_empty(), "failing seeds:\n{}", failed.join("\n"));
    // The seeds reach every decoder: modules with their lanes (SFP, QSFP, 16-lane CMIS),
    // replies that decode, and errors that are named.
    let lanes: Vec<usize> = results.iter().filter_map(|(_, o)| o.module_lanes).collect();
    assert!(
        lanes.contains(&1) && lanes.contains(&4) && lanes.contains(&16),
        "{lanes:?}"
    );
    assert!(results.iter().filter(|(_, o)| o.replies > 0).count() > 10);
    assert!(results
        .iter()
        .any(|(n, o)| n.contains("blank") && o.errors > 0));
}

/// Every generated seed is committed (by name: a committed seed may be older than the
/// generator).
#[test]
fn generated_seeds_are_committed() {
    for (name, _) in generated_seeds() {
        assert!(
            seed_dir().join(&name).is_file(),
            "{name} is missing: cargo test -p linerate-phy --test fuzz_seeds -- --ignored write_seeds"
        );
    }
}

/// (Re)writes the generated seeds; other files (minimised crashes) stay.
#[test]
#[ignore = "writes fuzz/seeds/phy_decoders"]
fn write_seeds() {
    fs::create_dir_all(seed_dir()).unwrap();
    for (name, bytes) in generated_seeds() {
        fs::write(seed_dir().join(name), bytes).unwrap();
    }
}
