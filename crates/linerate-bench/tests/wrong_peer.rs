//! `linerate bench` reaching something that is not its far end, with either protocol: an
//! iperf3 server (named, with the flag to use: `--iperf3`), an HTTP server, an SSH server, a
//! peer that answers garbage, one that closes, one that never answers. Each is a clear error
//! within the handshake's bound, saying what the peer is; the peers are fakes on 127.0.0.1.
//! The cases run side by side, so the silent ones cost one wait.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use linerate_bench::client::Iperf3Options;
use linerate_bench::{run_client, ClientConfig, ClientError, WireProtocol};
use linerate_proto::{Direction, TestKind, TestParams};

/// Longer than the client's bound on an answer (10 s): a client still running then has hung.
const CLIENT_LIMIT: Duration = Duration::from_secs(40);

/// What a fake peer does with each connection.
#[derive(Debug, Clone, Copy)]
enum Peer {
    /// An iperf3 server: reads 37 bytes, answers PARAM_EXCHANGE, then waits.
    Iperf3,
    /// A busy iperf3 server: ACCESS_DENIED at once.
    Iperf3Busy,
    /// Reads a request, answers `HTTP/1.1 400`.
    Http,
    /// Sends its banner at once.
    Ssh,
    /// Reads a little, answers binary garbage.
    Garbage,
    /// Reads a little, closes.
    Closes,
    /// Never says anything.
    Silent,
}

/// A fake peer on 127.0.0.1 serving one connection.
fn peer(kind: Peer) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = l.local_addr().expect("its address");
    thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
        let mut buf = [0u8; 4096];
        match kind {
            Peer::Iperf3 => {
                let mut cookie = [0u8; 37];
                if s.read_exact(&mut cookie).is_ok() {
                    let _ = s.write_all(&[9]);
                }
            }
            Peer::Iperf3Busy => {
                let _ = s.write_all(&[0xff]);
                return;
            }
            Peer::Http => {
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            }
            Peer::Ssh => {
                let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
            }
            Peer::Garbage => {
                let _ = s.read(&mut buf);
                let _ = s.write_all(&[0x42, 0x13, 0x37, 0x00, 0xff, 0x42, 0x13, 0x37]);
            }
            Peer::Closes => {
                let _ = s.read(&mut buf);
                return;
            }
            Peer::Silent => {}
        }
        // Hold the connection until the client is done with it.
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    });
    addr
}

fn run(addr: SocketAddr, iperf3: bool) -> ClientError {
    let mut p = TestParams::new(TestKind::TcpBw, Direction::Send);
    p.duration_ms = 1000;
    p.length = 64 * 1024;
    let cfg = ClientConfig {
        protocol: if iperf3 {
            WireProtocol::Iperf3(Iperf3Options::default())
        } else {
            WireProtocol::Linerate
        },
        ..ClientConfig::new(addr, p)
    };
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(run_client(&cfg, &mut |_| {}));
    });
    match rx.recv_timeout(CLIENT_LIMIT) {
        Ok(Ok(_)) => panic!("a test ran against a fake peer at {addr}"),
        Ok(Err(e)) => e,
        Err(e) => panic!("the client hung past {CLIENT_LIMIT:?} against {addr} ({e})"),
    }
}

#[test]
fn every_wrong_peer_is_named_within_the_handshake() {
    let cases: Vec<(Peer, bool, &[&str])> = vec![
        (
            Peer::Iperf3,
            false,
            &["is an iperf3 server", "PARAM_EXCHANGE", "add --iperf3"],
        ),
        (
            Peer::Iperf3Busy,
            false,
            &[
                "is an iperf3 server",
                "running another test",
                "add --iperf3",
            ],
        ),
        (
            Peer::Http,
            false,
            &[
                "does not speak linerate's protocol",
                "an HTTP server",
                "HTTP/1.1 400 Bad Request",
            ],
        ),
        (
            Peer::Http,
            true,
            &["does not speak iperf3", "an HTTP server"],
        ),
        (
            Peer::Ssh,
            false,
            &["an SSH server", "SSH-2.0-OpenSSH_9.2p1"],
        ),
        (Peer::Ssh, true, &["does not speak iperf3", "an SSH server"]),
        (
            Peer::Garbage,
            false,
            &["bytes neither protocol sends", "42 13 37 00 ff"],
        ),
        (
            Peer::Garbage,
            true,
            &["bytes neither protocol sends", "42 13 37 00 ff"],
        ),
        (
            Peer::Closes,
            false,
            &["closed the connection before answering"],
        ),
        (
            Peer::Closes,
            true,
            &["closed the control connection after iperf3's cookie"],
        ),
        (Peer::Silent, false, &["no answer", "within 10 s"]),
        (
            Peer::Silent,
            true,
            &["no answer", "within 10 s", "not an iperf3 server"],
        ),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|(kind, iperf3, _)| {
            let (kind, iperf3) = (*kind, *iperf3);
            let addr = peer(kind);
            thread::spawn(move || (addr, run(addr, iperf3)))
        })
        .collect();
    for ((kind, iperf3, expect), h) in cases.iter().zip(runs) {
        let (addr, e) = h.join().expect("a client thread");
        let m = e.to_string();
        for want in *expect {
            assert!(m.contains(want), "{kind:?} (iperf3: {iperf3}): {m}");
        }
        assert!(m.contains(&addr.to_string()), "{kind:?}: {m}");
        if !matches!(kind, Peer::Closes) {
            assert!(matches!(e, ClientError::WrongPeer(_)), "{kind:?}: {e:?}");
        }
    }
}
