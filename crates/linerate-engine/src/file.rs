//! File transfer: disk → network on the sender, network → disk on the receiver.
//!
//! Each stream carries one contiguous byte range of the file. On each side a
//! disk thread and a network thread pass a fixed set of buffers
//! ([`linerate_proto::FILE_BUFFERS`] × the block size) back and forth, so the
//! memory is bounded whatever the file's size, and each thread's time is
//! accounted separately: the disk thread's time in read(2)/write(2), and the
//! network thread's time waiting for the disk. From these the caller tells
//! which layer held the transfer back.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::thread;
use std::time::{Duration, Instant};

use linerate_proto::FileStats;

use crate::meter::{Meter, Stop};
use crate::{sys, StreamOutcome};

/// A disk operation or a hand-over that makes no progress for this long fails the stream.
pub const STALL: Duration = Duration::from_secs(30);

/// One stream's part of the file.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub offset: u64,
    pub len: u64,
}

/// Buffers of one stream.
#[derive(Debug, Clone, Copy)]
pub struct Buffers {
    /// Bytes per buffer: one read(2) or write(2) of the file.
    pub block: usize,
    /// How many: the disk and network threads work while the other does.
    pub count: usize,
}

impl Buffers {
    /// Bytes held by one side of one stream.
    pub fn bytes(&self) -> u64 {
        (self.block * self.count) as u64
    }
}

/// A filled buffer: its data, the bytes used, and where they belong in the file.
type Filled = (Vec<u8>, usize, u64);

fn pool(b: Buffers) -> (SyncSender<Vec<u8>>, Receiver<Vec<u8>>) {
    let (tx, rx) = sync_channel(b.count.max(1));
    for _ in 0..b.count.max(1) {
        let _ = tx.send(vec![0u8; b.block.max(1)]);
    }
    (tx, rx)
}

/// Read `buf.len()` bytes at `offset`, fewer only at end of file.
fn read_full_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Sender: read `range` of `file` on a disk thread and send it on `sock`, then
/// close the write side. Ends at the range's end, an error, `stop` or `deadline`.
pub fn send_range(
    mut sock: &TcpStream,
    file: &File,
    range: Range,
    bufs: Buffers,
    deadline: Instant,
    meter: &Meter,
    stop: &Stop,
) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Err(e) = sock.set_write_timeout(Some(STALL)) {
        out.error = Some(format!("setting the send timeout: {e}"));
        return out;
    }
    let (empty_tx, empty_rx) = pool(bufs);
    let (full_tx, full_rx) = sync_channel::<Result<Filled, String>>(bufs.count.max(1));
    let mut wait = Duration::ZERO;
    let mut sent: u64 = 0;
    let disk = thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut busy = Duration::ZERO;
            let mut read: u64 = 0;
            let end = range.offset + range.len;
            let mut off = range.offset;
            while off < end {
                let Ok(mut buf) = empty_rx.recv_timeout(STALL) else {
                    break; // the network side ended (or stalled): it reports why
                };
                let want = (end - off).min(buf.len() as u64) as usize;
                let t = Instant::now();
                let r = read_full_at(file, &mut buf[..want], off);
                busy += t.elapsed();
                let msg = match r {
                    Ok(0) => Err(format!(
                        "the source file ended at byte {off}, {} bytes short of the size announced: did it shrink during the transfer?",
                        end - off
                    )),
                    Ok(n) => {
                        read += n as u64;
                        Ok((buf, n, off))
                    }
                    Err(e) => Err(format!("reading the source file at byte {off}: {e}")),
                };
                let failed = msg.is_err();
                if let Ok((_, n, _)) = &msg {
                    off += *n as u64;
                }
                if full_tx.send(msg).is_err() || failed {
                    break;
                }
            }
            (read, busy)
        });
        loop {
            if stop.is_set() {
                break;
            }
            if Instant::now() >= deadline {
                out.error = Some(format!(
                    "the time limit was reached after {sent} of {} bytes (raise -t)",
                    range.len
                ));
                break;
            }
            let t = Instant::now();
            let got = full_rx.recv_timeout(STALL);
            wait += t.elapsed();
            match got {
                Ok(Ok((buf, n, _))) => {
                    if let Err(e) = write_counted(&mut sock, &buf[..n], meter, &mut sent) {
                        out.error = Some(e);
                        break;
                    }
                    let _ = empty_tx.send(buf);
                }
                Ok(Err(e)) => {
                    out.error = Some(e);
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => break, // all read and sent
                Err(RecvTimeoutError::Timeout) => {
                    out.error = Some(format!(
                        "reading the source file made no progress for {} s",
                        STALL.as_secs()
                    ));
                    break;
                }
            }
        }
        // Unblock the disk thread whatever state it is in.
        drop(full_rx);
        drop(empty_tx);
        reader.join().unwrap_or((0, Duration::ZERO))
    });
    out.ended = Some(Instant::now());
    out.tcp = sys::tcp_info(sock);
    let _ = sock.shutdown(Shutdown::Write);
    out.bytes = sent;
    out.file = Some(FileStats {
        disk_bytes: disk.0,
        disk_s: disk.1.as_secs_f64(),
        net_wait_s: wait.as_secs_f64(),
    });
    out
}

fn write_counted(
    sock: &mut &TcpStream,
    mut buf: &[u8],
    meter: &Meter,
    sent: &mut u64,
) -> Result<(), String> {
    while !buf.is_empty() {
        match sock.write(buf) {
            Ok(0) => return Err("sending: the connection closed".into()),
            Ok(n) => {
                *sent += n as u64;
                meter.add(n as u64);
                buf = &buf[n..];
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(crate::tcp::send_error(&e, STALL)),
        }
    }
    Ok(())
}

/// The receiver's disk thread: write each filled buffer at its offset and hand it back,
/// until the network side hangs up or a write fails. Returns the bytes written, the time
/// spent in write(2), and the error that ended it.
fn disk_writer(
    file: &File,
    full_rx: &Receiver<Filled>,
    empty_tx: &SyncSender<Vec<u8>>,
) -> (u64, Duration, Option<String>) {
    let mut busy = Duration::ZERO;
    let mut written: u64 = 0;
    while let Ok((buf, n, off)) = full_rx.recv() {
        let t = Instant::now();
        let r = file.write_all_at(&buf[..n], off);
        busy += t.elapsed();
        if let Err(e) = r {
            return (written, busy, Some(write_error(off, &e)));
        }
        written += n as u64;
        // The network side may have finished: the rest queued is still written.
        let _ = empty_tx.send(buf);
    }
    (written, busy, None)
}

/// A failed write at byte `off`, with the usual causes (full disk, quota) named.
fn write_error(off: u64, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => {
            format!("writing the file at byte {off}: no space left on the device")
        }
        Some(libc::EDQUOT) => format!("writing the file at byte {off}: disk quota exceeded"),
        _ => format!("writing the file at byte {off}: {e}"),
    }
}

/// Receiver: receive exactly `range.len` bytes on `sock` and write them at
/// `range.offset` of `file` on a disk thread. Ends at the peer's end of stream,
/// an error, `stop`, or `idle` without data.
pub fn recv_range(
    mut sock: &TcpStream,
    file: &File,
    range: Range,
    bufs: Buffers,
    idle: Duration,
    meter: &Meter,
    stop: &Stop,
) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Err(e) = sock.set_read_timeout(Some(idle)) {
        out.error = Some(format!("setting the receive timeout: {e}"));
        return out;
    }
    let (empty_tx, empty_rx) = pool(bufs);
    let (full_tx, full_rx) = sync_channel::<Filled>(bufs.count.max(1));
    let mut wait = Duration::ZERO;
    let mut got: u64 = 0;
    let end = range.offset + range.len;
    let (written, busy, disk_err) = thread::scope(|s| {
        let writer = s.spawn(move || disk_writer(file, &full_rx, &empty_tx));
        let mut off = range.offset;
        'stream: loop {
            if stop.is_set() {
                break;
            }
            let t = Instant::now();
            let buf = empty_rx.recv_timeout(STALL);
            wait += t.elapsed();
            let Ok(mut buf) = buf else {
                // The disk thread failed (it says why) or stalled.
                if out.error.is_none() {
                    out.error = Some(format!(
                        "writing the file made no progress for {} s",
                        STALL.as_secs()
                    ));
                }
                break;
            };
            // Fill the buffer so the disk sees whole blocks.
            let mut n = 0;
            let mut eof = false;
            while n < buf.len() && !stop.is_set() {
                match sock.read(&mut buf[n..]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(k) => {
                        n += k;
                        got += k as u64;
                        meter.add(k as u64);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        out.error = Some(crate::tcp::recv_error(&e, idle));
                        break 'stream;
                    }
                }
            }
            if off + n as u64 > end {
                out.error = Some(format!(
                    "the sender sent more than the {} bytes of its range: refusing to write past it",
                    range.len
                ));
                break;
            }
            if n > 0 {
                if full_tx.send((buf, n, off)).is_err() {
                    break;
                }
                off += n as u64;
            }
            if eof {
                break;
            }
        }
        drop(full_tx);
        drop(empty_rx);
        writer
            .join()
            .unwrap_or((0, Duration::ZERO, Some("the disk thread panicked".into())))
    });
    out.ended = Some(Instant::now());
    out.tcp = sys::tcp_info(sock);
    if let Some(e) = disk_err {
        // The disk's error is the cause; tell the sender at once.
        out.error = Some(e);
        let _ = sock.shutdown(Shutdown::Both);
    } else if out.error.is_none() && got != range.len && !stop.is_set() {
        out.error = Some(format!(
            "the sender closed the stream after {got} of {} bytes",
            range.len
        ));
    }
    out.bytes = got;
    out.file = Some(FileStats {
        disk_bytes: written,
        disk_s: busy.as_secs_f64(),
        net_wait_s: wait.as_secs_f64(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u64).wrapping_mul(2_654_435_761) as u8 ^ (i >> 12) as u8)
            .collect()
    }

    /// Move `data` over loopback in `streams` ranges; return the written file and the outcomes.
    fn transfer(
        data: &[u8],
        streams: u64,
        block: usize,
    ) -> (Vec<u8>, Vec<StreamOutcome>, Vec<StreamOutcome>) {
        let dir = tempfile::tempdir().unwrap();
        let src_path = dir.path().join("src");
        std::fs::write(&src_path, data).unwrap();
        let src = File::open(&src_path).unwrap();
        let dst = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.path().join("dst"))
            .unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let size = data.len() as u64;
        let bufs = Buffers { block, count: 4 };
        let (mut sent, mut recvd) = (Vec::new(), Vec::new());
        thread::scope(|s| {
            let mut hs = Vec::new();
            for i in 0..streams {
                let range = Range {
                    offset: size * i / streams,
                    len: size * (i + 1) / streams - size * i / streams,
                };
                let c = TcpStream::connect(addr).unwrap();
                let (a, _) = l.accept().unwrap();
                let (src, dst) = (&src, &dst);
                hs.push(s.spawn(move || {
                    let m = Meter::new();
                    send_range(
                        &c,
                        src,
                        range,
                        bufs,
                        Instant::now() + Duration::from_secs(20),
                        &m,
                        &Stop::new(),
                    )
                }));
                hs.push(s.spawn(move || {
                    let m = Meter::new();
                    recv_range(
                        &a,
                        dst,
                        range,
                        bufs,
                        Duration::from_secs(5),
                        &m,
                        &Stop::new(),
                    )
                }));
            }
            for (i, h) in hs.into_iter().enumerate() {
                let o = h.join().unwrap();
                if i % 2 == 0 {
                    sent.push(o);
                } else {
                    recvd.push(o);
                }
            }
        });
        (std::fs::read(dir.path().join("dst")).unwrap(), sent, recvd)
    }

    #[test]
    fn moves_the_file_exactly() {
        // Sizes that are not multiples of the block, and more streams than blocks.
        for (len, streams, block) in [(1, 1, 4096), (3 << 20, 1, 65536), (1_000_003, 3, 65536)] {
            let data = pattern(len);
            let (got, sent, recvd) = transfer(&data, streams, block);
            assert!(got == data, "{len} bytes in {streams} streams differ");
            for o in sent.iter().chain(&recvd) {
                assert_eq!(o.error, None);
            }
            let disk: u64 = recvd.iter().map(|o| o.file.unwrap().disk_bytes).sum();
            assert_eq!(disk, len as u64);
            let read: u64 = sent.iter().map(|o| o.file.unwrap().disk_bytes).sum();
            assert_eq!(read, len as u64);
        }
    }

    #[test]
    fn a_short_source_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("src");
        std::fs::write(&p, pattern(1000)).unwrap();
        let src = File::open(&p).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        let dst = tempfile::tempfile().unwrap();
        let range = Range {
            offset: 0,
            len: 5000,
        };
        let bufs = Buffers {
            block: 4096,
            count: 2,
        };
        let t = Instant::now();
        let (s, r) = thread::scope(|sc| {
            let h = sc.spawn(|| {
                recv_range(
                    &a,
                    &dst,
                    range,
                    bufs,
                    Duration::from_secs(5),
                    &Meter::new(),
                    &Stop::new(),
                )
            });
            let s = send_range(
                &c,
                &src,
                range,
                bufs,
                Instant::now() + Duration::from_secs(5),
                &Meter::new(),
                &Stop::new(),
            );
            (s, h.join().unwrap())
        });
        assert!(t.elapsed() < Duration::from_secs(4));
        assert!(s.error.unwrap().contains("shrink"));
        assert!(r.error.unwrap().contains("after 1000 of 5000"));
    }

    #[test]
    fn a_dead_sender_ends_the_receiver() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        (&c).write_all(&[7u8; 10_000]).unwrap();
        drop(c);
        let dst = tempfile::tempfile().unwrap();
        let o = recv_range(
            &a,
            &dst,
            Range {
                offset: 0,
                len: 1 << 20,
            },
            Buffers {
                block: 4096,
                count: 2,
            },
            Duration::from_secs(5),
            &Meter::new(),
            &Stop::new(),
        );
        assert_eq!(o.bytes, 10_000);
        assert!(o.error.unwrap().contains("after 10000 of 1048576"));
        assert_eq!(dst.metadata().unwrap().len(), 10_000);
    }
}
