//! `linerate watch` on a real terminal: tmux (a private server of its own) runs the screen
//! while `linerate bench` sends through a namespace pair, and `capture-pane` reads it back:
//!
//! - the pair's rates agree with bench's within 10%;
//! - a bar against a ceiling: a second screen watches a fixture tree (an Intel 82599 at
//!   10 GbE) whose interface statistics are the veth's own (a bind mount inside the namespace),
//!   so the bench's real traffic is drawn against a real ceiling chain, bar and share agreeing
//!   with the rate;
//! - the keys change the sort, the filter, the details, the units and the help;
//! - a resize redraws at the new size;
//! - `q` and SIGTERM leave the terminal as it was (main screen, cooked mode), a killed pane
//!   leaves no process behind.
//!
//! The capture during the bench is rendered to a PNG by headless Chromium (the screenshot of
//! docs/watch.md): `target/watch-screen.png`, and `docs/watch-screen.png` too with
//! `LINERATE_UPDATE_SCREENSHOT=1`.
//!
//! Needs root (namespaces, a bind mount) and tmux (scripts/setup-tests.sh installs it).

mod common;
mod soak_tree;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{serial, Net, BIN, PORT};
use serde_json::Value;

/// A tmux server of this test's own (`-L`), killed on drop and its socket removed.
struct Tmux {
    socket: String,
    session: String,
    socket_path: Option<PathBuf>,
}

impl Tmux {
    /// A detached session of `w`×`h` running a plain shell; `None` (skip recorded) without tmux.
    fn new(name: &str, w: u16, h: u16) -> Option<Tmux> {
        let mut t = Tmux {
            socket: format!("linerate-test-{}-{name}", std::process::id()),
            session: name.to_string(),
            socket_path: None,
        };
        let ok = Command::new("tmux")
            .args([
                "-L",
                &t.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                name,
            ])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .args([
                "env",
                "PS1=$ ",
                "TERM=xterm-256color",
                "bash",
                "--norc",
                "--noprofile",
            ])
            .stdin(Stdio::null())
            .status();
        match ok {
            Ok(s) if s.success() => {
                t.tmux(&["set-option", "-g", "window-size", "manual"]);
                t.socket_path = Some(PathBuf::from(t.display("#{socket_path}")));
                Some(t)
            }
            Ok(s) => panic!("tmux new-session failed: {s}"),
            Err(_) => {
                linerate_testkit::skip("tmux is not installed (Debian package tmux)");
                None
            }
        }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tmux");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `text` and Enter in the pane.
    fn line(&self, text: &str) {
        self.tmux(&["send-keys", "-t", &self.session, "-l", text]);
        self.tmux(&["send-keys", "-t", &self.session, "Enter"]);
    }

    /// Sends tmux key names (`Enter`, `Escape`, `s`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The screen as text.
    fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.session])
    }

    /// The screen with its colours (SGR sequences).
    fn capture_ansi(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", &self.session])
    }

    fn display(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", &self.session, format])
            .trim()
            .to_string()
    }

    /// Captures until `pred` holds (every 100 ms, 20 s at most).
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            assert!(
                Instant::now() < until,
                "the screen never showed {what}:\n{s}"
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// The process the pane's shell runs in the foreground (the watch), when there is one.
    fn child(&self) -> Option<u32> {
        let shell = self.display("#{pane_pid}");
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).ok()?;
        children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
    }

    /// The pane's terminal is back to normal: the main screen, and `stty` says cooked mode
    /// with echo (written to a file by the pane's shell).
    fn assert_restored(&self, dir: &Path, what: &str) {
        assert_eq!(
            self.display("#{alternate_on}"),
            "0",
            "{what}: still on the alternate screen"
        );
        let f = dir.join(format!("stty-{}", what.replace(' ', "-")));
        self.line(&format!("stty -a > {}", f.display()));
        let until = Instant::now() + Duration::from_secs(10);
        let stty = loop {
            if let Ok(s) = std::fs::read_to_string(&f).map(|s| s.replace('\n', " ")) {
                if s.contains("icanon") {
                    break s;
                }
            }
            assert!(Instant::now() < until, "{what}: the shell never ran stty");
            thread::sleep(Duration::from_millis(100));
        };
        let words: Vec<&str> = stty.split_whitespace().collect();
        for w in ["icanon", "echo", "isig", "icrnl", "opost"] {
            assert!(words.contains(&w), "{what}: `{w}` is off: {stty}");
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The row of the table whose first word is `port`.
fn row<'a>(screen: &'a str, port: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|l| l.split_whitespace().next() == Some(port))
}

/// The rates of a row (`9.41 Gb/s`, `812 Mb/s`, `0 b/s`), in Gb/s, in order: RX, TX.
fn rates(row: &str) -> Vec<f64> {
    let words: Vec<&str> = row.split_whitespace().collect();
    words
        .windows(2)
        .filter_map(|w| {
            let v: f64 = w[0].trim_end_matches('*').parse().ok()?;
            let scale = match w[1] {
                "Tb/s" => 1e3,
                "Gb/s" => 1.0,
                "Mb/s" => 1e-3,
                "kb/s" => 1e-6,
                "b/s" => 1e-9,
                _ => return None,
            };
            Some(v * scale)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `linerate bench` from a to b: TCP paced at 2 Gb/s (steady on a busy machine), its JSON.
fn bench(net: &Net, secs: u32) -> thread::JoinHandle<Value> {
    let (a, server) = (net.a.clone(), net.server_ip());
    thread::spawn(move || {
        let out = Command::new("timeout")
            .args(["60", "ip", "netns", "exec", &a, BIN, "bench", &server])
            .args([
                "-p",
                &PORT.to_string(),
                "-t",
                &secs.to_string(),
                "-b",
                "2G",
                "-J",
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run linerate bench");
        assert!(out.status.success(), "bench: {out:?}");
        serde_json::from_slice(&out.stdout).expect("bench -J prints JSON")
    })
}

/// A copy of the Intel 82599 fixture (10 GbE, ceiling 10 Gb/s set by the link), and its
/// interface's `statistics/` directory.
fn fixture_tree() -> (tempfile::TempDir, PathBuf) {
    // (the carrier counts are the fixture's, so the test can make the link flap)
    let t = tempfile::tempdir().unwrap();
    let out = Command::new("cp")
        .arg("-a")
        .arg(soak_tree::fixture("intel-82599-10g").join("."))
        .arg(t.path())
        .output()
        .expect("cp");
    assert!(out.status.success(), "cp -a: {out:?}");
    let stats = t
        .path()
        .join("sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0/net/enp3s0f0/statistics");
    assert!(stats.is_dir(), "{}", stats.display());
    std::fs::write(stats.with_file_name("carrier_down_count"), "3\n").unwrap();
    (t, stats)
}

#[test]
fn the_screen_during_a_bench_keys_resize_and_a_clean_exit() {
    let _s = serial();
    let Some(net) = Net::new(1500) else { return };
    let Some(tm) = Tmux::new("watch", 200, 50) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The live screen in namespace a: its veth is the pair's end.
    tm.line(&format!("ip netns exec {} {BIN} watch -i 1s", net.a));
    tm.wait_for("the veth's row", |s| {
        row(s, &net.va).is_some() && s.contains("linerate watch")
    });
    // A second screen: the fixture's interface counts the veth's traffic.
    let Some(fx) = Tmux::new("fixture", 200, 50) else {
        return;
    };
    let (tree, stats) = fixture_tree();
    fx.line(&format!(
        "ip netns exec {} sh -c 'mount --bind /sys/class/net/{}/statistics {} && exec {BIN} watch -i 1s --root {}'",
        net.a,
        net.va,
        stats.display(),
        tree.path().display()
    ));
    fx.wait_for("the fixture's row", |s| row(s, "enp3s0f0").is_some());
    during_a_bench(&net, &tm, &fx, &stats, dir.path());
    keys_and_resize(&net, &tm);
    exits(&net, &tm, &fx, dir.path());
    drop(tree);
    net.close();
}

/// Both screens while bench runs: their rates against bench's, the bar against the ceiling;
/// the fixture's screen with its detail pane is the screenshot.
fn during_a_bench(net: &Net, tm: &Tmux, fx: &Tmux, stats: &Path, dir: &Path) {
    let job = bench(net, 10);
    // Rates from the 3rd to the 8th second of the bench, a capture each second.
    thread::sleep(Duration::from_secs(3));
    let (mut live, mut fixture, mut shares) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..6 {
        let s = tm.capture();
        let r = row(&s, &net.va).unwrap_or_else(|| panic!("no row of {}:\n{s}", net.va));
        live.push(rates(r)[1]);
        let f = fx.capture();
        let r = row(&f, "enp3s0f0").unwrap_or_else(|| panic!("no fixture row:\n{f}"));
        fixture.push(rates(r)[1]);
        let share: f64 = r
            .split_whitespace()
            .find_map(|w| w.strip_suffix('%').and_then(|p| p.parse().ok()))
            .unwrap_or_else(|| panic!("no share in {r}"));
        let cells = r.chars().filter(|c| *c == '█').count();
        shares.push((share, cells, rates(r)[1]));
        assert!(r.contains("10.0 Gb/s (link)"), "{r}");
        if i == 1 {
            // The link went down and up between two samples: a flap, and soak's `link_down`.
            std::fs::write(stats.with_file_name("carrier_down_count"), "4\n").unwrap();
        }
        if i == 3 {
            fx.keys(&["Enter"]);
        }
        thread::sleep(Duration::from_secs(1));
    }
    let b = job.join().unwrap();
    let t = &b["tests"][0];
    let (gbps, l2) = (t["gbps"].as_f64().unwrap(), t["l2_gbps"].as_f64().unwrap());
    let (live, fixture) = (median(live), median(fixture));
    println!(
        "bench {gbps:.3} Gb/s (L2 {l2:.3}); watch {live:.3} Gb/s on the veth, {fixture:.3} on the fixture; (share, bar cells, Gb/s): {shares:?}"
    );
    for w in [live, fixture] {
        assert!(
            (w / l2 - 1.0).abs() < 0.10,
            "watch {w} Gb/s, bench {l2} Gb/s (L2)"
        );
    }
    // The bar and the share say the rate over the 10 Gb/s ceiling: the share within a point,
    // the bar's full cells (11 cells) within one.
    for (share, cells, rate) in &shares {
        assert!(
            (share - rate * 10.0).abs() <= 1.0,
            "{share}% for {rate} Gb/s"
        );
        let want = rate / 10.0 * 11.0;
        assert!(
            (*cells as f64 - want).abs() <= 1.0,
            "{cells} cells for {rate} Gb/s"
        );
    }
    // The flap on the row (soak's verdict and the counter) and in the log pane.
    let f = fx.wait_for("the flap judged", |s| {
        row(s, "enp3s0f0").is_some_and(|r| r.contains("bad: carrier_down_count +1"))
    });
    assert!(f.contains("flap (carrier_down_count +1)"), "{f}");
    screenshot(&fx.capture_ansi(), dir);
}

/// The keys on the live screen, then a resize.
fn keys_and_resize(net: &Net, tm: &Tmux) {
    tm.keys(&["s"]);
    tm.wait_for("sort utilisation", |s| s.contains("sort utilisation"));
    tm.keys(&["/", "z", "z", "z", "Enter"]);
    tm.wait_for("the filter", |s| {
        s.contains("no port matches the filter `zzz`")
    });
    tm.keys(&["Escape"]);
    tm.wait_for("the filter cleared", |s| row(s, &net.va).is_some());
    tm.keys(&["b"]);
    tm.wait_for("bytes", |s| {
        s.contains("bytes (GB/s = 10^9 byte/s)") && s.contains("B/s")
    });
    tm.keys(&["Enter"]);
    tm.wait_for("the detail pane", |s| {
        s.contains("counters (increase in the last interval")
    });
    tm.keys(&["?"]);
    tm.wait_for("the help", |s| s.contains("linerate watch: keys"));
    tm.keys(&["x"]);
    tm.wait_for("the help closed", |s| !s.contains("linerate watch: keys"));
    // A resize redraws at the new size: at 90 columns the packet columns go.
    let wide = tm.capture();
    assert!(wide.contains("RX PKT"), "{wide}");
    tm.tmux(&["resize-window", "-t", "watch", "-x", "90", "-y", "30"]);
    let narrow = tm.wait_for("the narrow screen", |s| {
        !s.contains("RX PKT") && s.contains("PORT")
    });
    assert!(narrow.lines().all(|l| l.chars().count() <= 90), "{narrow}");
    assert!(narrow.lines().count() <= 30, "{narrow}");
}

/// `q` and SIGTERM give the terminal back; a killed pane leaves no process.
fn exits(net: &Net, tm: &Tmux, fx: &Tmux, dir: &Path) {
    let pid = tm.child().expect("the watch runs");
    tm.keys(&["q"]);
    gone(pid, "after q");
    tm.assert_restored(dir, "after q");
    tm.line(&format!("ip netns exec {} {BIN} watch -i 1s", net.a));
    tm.wait_for("the screen again", |s| s.contains("errors judged over"));
    let pid = tm.child().expect("the watch runs");
    assert!(Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    gone(pid, "after SIGTERM");
    tm.assert_restored(dir, "after SIGTERM");
    let pid = fx.child().expect("the fixture's watch runs");
    fx.tmux(&["kill-pane", "-t", "fixture"]);
    gone(pid, "after its pane was killed");
}

/// The process ends within 5 s.
fn gone(pid: u32, what: &str) {
    let until = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < until,
            "linerate watch (pid {pid}) still runs {what}"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// The capture rendered as a page (the terminal's cells, its colours) and photographed by
/// headless Chromium: `target/watch-screen.png`, and docs/watch-screen.png with
/// `LINERATE_UPDATE_SCREENSHOT=1`. Without Chromium, the page alone.
fn screenshot(ansi: &str, dir: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = dir.join("watch-screen.html");
    std::fs::write(&page, linerate_testkit::browser::ansi_html(ansi)).unwrap();
    let Some(bin) = linerate_testkit::browser::chromium() else {
        linerate_testkit::skip("no Chromium to photograph the screen (apt-get install chromium)");
        return;
    };
    let png = dir.join("watch-screen.png");
    let out = linerate_testkit::browser::headless(
        &bin,
        dir,
        "shot",
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1640,900".into(),
        ],
        &page,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .status()
    .expect("run chromium");
    assert!(out.success(), "chromium --screenshot: {out}");
    let bytes = std::fs::read(&png).expect("the screenshot");
    assert_eq!(linerate_testkit::browser::png_size(&bytes), (1640, 900));
    let keep = repo.join("target/watch-screen.png");
    std::fs::create_dir_all(keep.parent().unwrap()).unwrap();
    std::fs::copy(&png, &keep).unwrap();
    std::fs::write(
        repo.join("target/watch-screen.txt"),
        linerate_testkit::browser::ansi_strip(ansi),
    )
    .unwrap();
    if std::env::var_os("LINERATE_UPDATE_SCREENSHOT").is_some_and(|v| v == "1") {
        std::fs::copy(&png, repo.join("docs/watch-screen.png")).unwrap();
    }
}
