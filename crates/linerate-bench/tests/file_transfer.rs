//! File transfer (disk → network → disk) against an in-process server on 127.0.0.1:
//! the copy is exact, the layers are accounted, and the server's write directory holds
//! only complete files that it was allowed to create. Every wait is bounded.

use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use linerate_bench::{assemble, run_client, ClientConfig, ClientError, ServerConfig, WriteDir};
use linerate_proto::{
    read_msg, write_msg, Direction, FileSpec, Limits, Msg, RefusalKind, TestKind, TestParams,
    MAGIC, MAX_RESULTS_FRAME, PROTOCOL_VERSION,
};
use linerate_testkit::is_root;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn start_server(write_dir: Option<WriteDir>, limits: Limits) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let cfg = ServerConfig {
        bind: addr,
        limits,
        handshake_timeout: Duration::from_secs(2),
        log: false,
        write_dir: write_dir.map(Arc::new),
        ..ServerConfig::default()
    };
    thread::spawn(move || linerate_bench::serve_on(&l, cfg));
    addr
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn params(name: &str, size: u64, streams: u32) -> TestParams {
    TestParams {
        streams,
        duration_ms: 20_000,
        interval_ms: 0,
        length: 256 * 1024,
        file: Some(FileSpec {
            name: name.into(),
            size,
            fsync: true,
            remove_after: false,
        }),
        ..TestParams::new(TestKind::FileTransfer, Direction::Send)
    }
}

fn client(server: SocketAddr, params: TestParams, src: &Path) -> ClientConfig {
    ClientConfig {
        file: Some(Arc::new(File::open(src).unwrap())),
        ..ClientConfig::new(server, params)
    }
}

/// Run a client on a thread, bounded in time.
fn bench(cfg: ClientConfig) -> Result<linerate_bench::ClientRun, ClientError> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(run_client(&cfg, &mut |_| {}));
    });
    rx.recv_timeout(Duration::from_secs(40))
        .expect("the client did not finish within 40 s")
}

#[test]
fn copies_exactly_and_names_the_layers() {
    let _g = serial();
    let src_dir = tempfile::tempdir().unwrap();
    let dst_dir = tempfile::tempdir().unwrap();
    let data = pattern(24 * 1024 * 1024 + 12_345, 7);
    let src = src_dir.path().join("source.bin");
    std::fs::write(&src, &data).unwrap();
    let addr = start_server(
        Some(WriteDir::open(dst_dir.path()).unwrap()),
        Limits::default(),
    );
    for streams in [1, 3] {
        let name = format!("copy-{streams}.bin");
        let run = bench(client(
            addr,
            params(&name, data.len() as u64, streams),
            &src,
        ))
        .unwrap();
        assert_eq!(run.error, None);
        let got = std::fs::read(dst_dir.path().join(&name)).unwrap();
        assert!(got == data, "the copy with {streams} streams differs");
        let t = assemble(&run);
        assert_eq!(t.kind, "file_transfer");
        let f = t.file.expect("file layers");
        assert_eq!(f.written_bytes, data.len() as u64);
        assert!(f.fsync_s.is_some());
        let names: Vec<&str> = f.layers.iter().map(|l| l.layer).collect();
        assert_eq!(names, ["source_read", "network", "destination_write"]);
        assert!(f
            .layers
            .iter()
            .all(|l| l.gbps > 0.0 && l.busy_percent <= 100.0));
        assert!(f.bottleneck.is_some());
        assert!(f.end_to_end_gbps > 0.0 && t.gbps == f.end_to_end_gbps);
        assert_eq!(f.buffer_bytes, u64::from(streams) * 4 * 256 * 1024);
    }
    // Asked to remove it after measuring: nothing stays behind.
    let mut p = params("gone.bin", data.len() as u64, 2);
    p.file.as_mut().unwrap().remove_after = true;
    let run = bench(client(addr, p, &src)).unwrap();
    assert_eq!(run.error, None);
    assert!(!dst_dir.path().join("gone.bin").exists());
}

#[test]
fn refusals_are_clear_and_write_nothing() {
    let _g = serial();
    let src_dir = tempfile::tempdir().unwrap();
    let src = src_dir.path().join("s");
    std::fs::write(&src, pattern(100_000, 1)).unwrap();
    // A server that accepts no files.
    let open = start_server(None, Limits::default());
    match bench(client(open, params("a", 100_000, 1), &src)) {
        Err(ClientError::Refused { kind, reason: r }) => {
            assert!(r.contains("--write-dir"), "{r}");
            assert_eq!(kind, RefusalKind::NoWriteDir);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("incoming");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("exists"), b"keep me").unwrap();
    let limits = Limits {
        max_file_bytes: 1_000_000,
        ..Limits::default()
    };
    let addr = start_server(Some(WriteDir::open(&dir).unwrap()), limits);
    let refused = |name: &str, size: u64, what: &str| match bench(client(
        addr,
        params(name, size, 1),
        &src,
    )) {
        Err(ClientError::Refused { reason: r, .. }) => assert!(r.contains(what), "{name}: {r}"),
        other => panic!("{name}: expected a refusal, got {other:?}"),
    };
    refused("../escape", 100_000, "not a path");
    refused(".hidden", 100_000, "refused");
    refused("exists", 100_000, "refusing to overwrite");
    refused("big", 2_000_000, "--max-file-size");
    assert_eq!(std::fs::read(dir.join("exists")).unwrap(), b"keep me");
    assert!(!root.path().join("escape").exists());
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["exists"]);
}

/// Speak the protocol by hand: request a file transfer and attach its one data stream.
fn raw_transfer(addr: SocketAddr, p: &TestParams) -> (TcpStream, TcpStream) {
    let mut ctl = TcpStream::connect(addr).unwrap();
    ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write_msg(
        &mut ctl,
        &Msg::Hello {
            magic: MAGIC.into(),
            protocol: PROTOCOL_VERSION,
            version: "test".into(),
            nonce: "00".into(),
        },
    )
    .unwrap();
    assert!(matches!(
        read_msg(&mut ctl, MAX_RESULTS_FRAME).unwrap(),
        Msg::ServerHello { .. }
    ));
    write_msg(&mut ctl, &Msg::Request { params: p.clone() }).unwrap();
    let cookie = match read_msg(&mut ctl, MAX_RESULTS_FRAME).unwrap() {
        Msg::Accepted { cookie, .. } => cookie,
        other => panic!("not accepted: {other:?}"),
    };
    let mut data = TcpStream::connect(addr).unwrap();
    write_msg(&mut data, &Msg::DataHello { cookie, stream: 0 }).unwrap();
    write_msg(&mut ctl, &Msg::Start).unwrap();
    (ctl, data)
}

/// The server's results for a raw transfer (skipping intervals), within a bound.
fn raw_results(ctl: &mut TcpStream) -> linerate_proto::SideResults {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        match read_msg(ctl, MAX_RESULTS_FRAME) {
            Ok(Msg::Results { results }) => return results,
            Ok(_) => {}
            Err(e) => panic!("no results: {e}"),
        }
    }
    panic!("no results within 30 s");
}

fn wait_gone(p: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if !p.exists() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_client_dying_mid_transfer_leaves_no_file() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let addr = start_server(Some(WriteDir::open(dir.path()).unwrap()), Limits::default());
    let (ctl, mut data) = raw_transfer(addr, &params("partial.bin", 10 << 20, 1));
    data.write_all(&pattern(1 << 20, 3)).unwrap();
    let f = dir.path().join("partial.bin");
    assert!(f.exists(), "the server creates the file when it accepts");
    drop(data);
    drop(ctl);
    assert!(wait_gone(&f), "the partial file was left behind");
}

#[test]
fn a_short_stream_is_an_error_and_removed() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let addr = start_server(Some(WriteDir::open(dir.path()).unwrap()), Limits::default());
    let (mut ctl, mut data) = raw_transfer(addr, &params("short.bin", 4 << 20, 1));
    data.write_all(&pattern(1 << 20, 4)).unwrap();
    data.shutdown(std::net::Shutdown::Write).unwrap();
    write_msg(&mut ctl, &Msg::Done).unwrap();
    let r = raw_results(&mut ctl);
    let e = r.error.expect("an error");
    assert!(e.contains("after 1048576 of 4194304"), "{e}");
    assert!(wait_gone(&dir.path().join("short.bin")));
}

/// A size-limited tmpfs, unmounted on drop.
struct SmallFs(tempfile::TempDir);

impl SmallFs {
    fn mount(size: &str) -> Option<Self> {
        if !is_root() {
            linerate_testkit::skip("mounting a small tmpfs needs root");
            return None;
        }
        let d = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mount -t tmpfs failed although root");
        Some(Self(d))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_nothing() {
    let _g = serial();
    let Some(fs) = SmallFs::mount("16m") else {
        return;
    };
    let dir = fs.0.path();
    // Up front: a file larger than the free space is refused.
    let addr = start_server(
        Some(WriteDir::open(dir).unwrap().with_reserve(0)),
        Limits::default(),
    );
    let src_dir = tempfile::tempdir().unwrap();
    let src = src_dir.path().join("s");
    std::fs::write(&src, pattern(20 << 20, 5)).unwrap();
    match bench(client(addr, params("big", 20 << 20, 1), &src)) {
        Err(ClientError::Refused { kind, reason: r }) => {
            assert!(r.contains("not enough space"), "{r}");
            assert_eq!(kind, RefusalKind::FileRefused);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Mid-transfer: the space goes after the check (another writer fills the disk).
    let (mut ctl, mut data) = raw_transfer(addr, &params("victim", 12 << 20, 1));
    std::fs::write(dir.join("filler"), vec![1u8; 8 << 20]).unwrap();
    let chunk = pattern(1 << 20, 6);
    for _ in 0..12 {
        if data.write_all(&chunk).is_err() {
            break; // the server gave up on the stream: expected
        }
    }
    let _ = data.shutdown(std::net::Shutdown::Write);
    write_msg(&mut ctl, &Msg::Done).unwrap();
    let r = raw_results(&mut ctl);
    let e = r.error.expect("an error");
    assert!(e.contains("no space left"), "{e}");
    assert!(
        wait_gone(&dir.join("victim")),
        "the partial file was left behind"
    );
    assert!(
        dir.join("filler").exists(),
        "someone else's file was touched"
    );
}

#[test]
fn a_read_only_directory_is_refused_at_start() {
    let _g = serial();
    if !is_root() {
        linerate_testkit::skip("mounting a read-only tmpfs needs root");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
        .arg(d.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok);
    let e = WriteDir::open(d.path()).unwrap_err();
    let _ = Command::new("umount").arg(d.path()).status();
    assert!(e.contains("cannot write into it"), "{e}");
}

#[test]
fn a_write_directory_removed_mid_transfer_is_an_error() {
    let _g = serial();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("incoming");
    std::fs::create_dir(&dir).unwrap();
    let addr = start_server(Some(WriteDir::open(&dir).unwrap()), Limits::default());
    let (mut ctl, mut data) = raw_transfer(addr, &params("f.bin", 2 << 20, 1));
    data.write_all(&pattern(1 << 20, 8)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let _ = data.write_all(&pattern(1 << 20, 9));
    let _ = data.shutdown(std::net::Shutdown::Write);
    write_msg(&mut ctl, &Msg::Done).unwrap();
    let r = raw_results(&mut ctl);
    let e = r.error.expect("an error");
    assert!(e.contains("removed or replaced"), "{e}");
    assert!(!dir.exists());
}
