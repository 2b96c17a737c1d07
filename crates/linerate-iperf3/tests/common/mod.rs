//! The golden transcripts in `tests/transcripts/`, read (see `capture.py` there for the format).
#![allow(dead_code, reason = "each test file uses a part")]

use std::fs;
use std::path::{Path, PathBuf};

use linerate_iperf3::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    C2s,
    S2c,
}

#[derive(Debug, Default)]
pub struct Tcp {
    pub c2s_head: Vec<u8>,
    pub s2c_head: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct Udp {
    pub first: Vec<(Dir, usize, Vec<u8>)>,
    pub forwarded: Vec<Vec<u8>>,
}

#[derive(Debug)]
pub struct Transcript {
    /// `VERSION/SCENARIO.txt`, or `CLIENT-to-SERVER/SCENARIO.txt`.
    pub name: String,
    pub client: Version,
    pub server: Version,
    /// The control connection's chunks, in the order the proxy read them.
    pub control: Vec<(Dir, Vec<u8>)>,
    pub tcp: Vec<Tcp>,
    pub udp: Vec<Udp>,
}

impl Transcript {
    /// Everything one side wrote on the control connection.
    pub fn stream(&self, d: Dir) -> Vec<u8> {
        self.control
            .iter()
            .filter(|(dir, _)| *dir == d)
            .flat_map(|(_, bytes)| bytes.iter().copied())
            .collect()
    }

    /// The scenario, the file's name without `.txt`.
    pub fn scenario(&self) -> &str {
        self.name
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .trim_end_matches(".txt")
    }
}

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn dir(s: &str) -> Dir {
    match s {
        "c2s" => Dir::C2s,
        "s2c" => Dir::S2c,
        other => panic!("direction {other}"),
    }
}

pub fn parse(path: &Path) -> Transcript {
    let text = fs::read_to_string(path).unwrap();
    let name = path
        .strip_prefix(transcripts_dir())
        .unwrap()
        .display()
        .to_string();
    let mut t = Transcript {
        name,
        client: Version::new(0, 0, 0),
        server: Version::new(0, 0, 0),
        control: Vec::new(),
        tcp: Vec::new(),
        udp: Vec::new(),
    };
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("# client: ") {
            t.client = Version::parse(v).unwrap();
        } else if let Some(v) = line.strip_prefix("# server: ") {
            t.server = Version::parse(v).unwrap();
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "control" => t.control.push((dir(f[1]), hex(f[2]))),
            "tcp" => {
                let n: usize = f[1].parse().unwrap();
                if t.tcp.len() < n {
                    t.tcp.resize_with(n, Tcp::default);
                }
                match f[2] {
                    "c2s-head" => t.tcp[n - 1].c2s_head = hex(f[3]),
                    "s2c-head" => t.tcp[n - 1].s2c_head = hex(f[3]),
                    "total" => {}
                    other => panic!("{other}"),
                }
            }
            "udp" => {
                let n: usize = f[1].parse().unwrap();
                if t.udp.len() < n {
                    t.udp.resize_with(n, Udp::default);
                }
                match f[2] {
                    "c2s" | "s2c" => {
                        t.udp[n - 1]
                            .first
                            .push((dir(f[2]), f[3].parse().unwrap(), hex(f[4])));
                    }
                    "fwd" => t.udp[n - 1].forwarded.push(hex(f[4])),
                    "total" => {}
                    other => panic!("{other}"),
                }
            }
            other => panic!("{}: record {other}", path.display()),
        }
    }
    t
}

pub fn transcripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/transcripts")
}

pub fn all() -> Vec<Transcript> {
    let mut out = Vec::new();
    for dir in fs::read_dir(transcripts_dir()).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "txt") {
                out.push(parse(&file));
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 90, "{} transcripts", out.len());
    out
}
