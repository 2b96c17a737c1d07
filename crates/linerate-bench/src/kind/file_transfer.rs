//! `file_transfer`: on each stream, a disk thread and a network thread with buffers between
//! them (the client reads its range of the file, the server writes it); the server creates the
//! file in its write directory, makes it durable when asked, keeps or removes it.

use std::net::TcpStream;
use std::time::Instant;

use linerate_engine::file;
use linerate_proto::{Refusal, RefusalKind, SideResults, TestParams, FILE_BUFFERS};
use linerate_results::TestResult;

use super::{Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::{file_transfer, throughput, CpuSpan, TransportStats};
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::{StreamFn, Streams, IDLE};

pub(super) struct FileTransfer;

impl Kind for FileTransfer {
    fn ends(&self) -> Ends {
        Ends::Tcp {
            run: stream,
            nodelay: false,
        }
    }

    fn admit(&self, _: &TestParams, cfg: &ServerConfig) -> Result<(), Refusal> {
        if cfg.write_dir.is_none() {
            return Err(Refusal::new(
                RefusalKind::NoWriteDir,
                "this server accepts no files: its operator can allow them with `linerate serve --write-dir DIR`",
            ));
        }
        Ok(())
    }

    /// The file, created now so a refusal says why before anything is sent.
    fn prepare(&self, p: &TestParams, cfg: &ServerConfig) -> Result<Held, Refusal> {
        match (&p.file, &cfg.write_dir) {
            (Some(spec), Some(dir)) => dir
                .create(spec)
                .map(|f| Held { file: Some(f) })
                .map_err(|e| Refusal::new(RefusalKind::FileRefused, e)),
            // Shape and admission saw to both.
            _ => Err(Refusal::new(
                RefusalKind::ServerError,
                "a file transfer without its file or write directory",
            )),
        }
    }

    /// Make a complete file durable (when asked) and keep it; remove an incomplete one.
    fn finish(&self, held: Held, p: &TestParams, results: &mut SideResults) -> Option<FileLog> {
        let (f, spec) = (held.file?, p.file.as_ref()?);
        let written: u64 = results
            .streams
            .iter()
            .filter_map(|s| s.file.map(|f| f.disk_bytes))
            .sum();
        let mut complete = results.error.is_none() && written == spec.size;
        if results.error.is_none() && written != spec.size {
            results.error = Some(format!("wrote {written} of the file's {} bytes", spec.size));
        }
        if complete && !f.still_there() {
            results.error = Some(format!(
                "`{}` was removed or replaced in the write directory during the transfer",
                f.name()
            ));
            complete = false;
        }
        if complete && spec.fsync {
            let t = Instant::now();
            match f.file.sync_all() {
                Ok(()) => results.fsync_s = Some(t.elapsed().as_secs_f64()),
                Err(e) => {
                    results.error = Some(format!("fsync of the received file: {e}"));
                    complete = false;
                }
            }
        }
        let path = f.path().display().to_string();
        let kept = complete && !spec.remove_after;
        if kept {
            f.keep();
        } else {
            drop(f);
        }
        Some(FileLog {
            path,
            size: spec.size,
            written,
            kept,
        })
    }

    fn assemble(&self, t: &mut TestResult, run: &ClientRun) {
        throughput(t, run, TransportStats::None, CpuSpan::LongestStream);
        t.file = file_transfer(&run.params, &run.local, run.remote.as_ref());
        if let Some(f) = &t.file {
            // The headline of a copy is the rate it reached the disk at, not the wire's.
            t.gbps = f.end_to_end_gbps;
        }
    }
}

/// Stream `idx`'s range of the file: read and sent, or received and written.
fn stream(st: &mut Streams<'_>, idx: u32, s: TcpStream) -> Result<(), String> {
    let p = st.params();
    let (Some(f), Some(spec)) = (st.plan().file.clone(), p.file.as_ref()) else {
        return Err("internal: a file transfer without its file".into());
    };
    let (offset, len) = spec.range(idx, p.streams);
    let range = file::Range { offset, len };
    let bufs = file::Buffers {
        block: p.length as usize,
        count: FILE_BUFFERS as usize,
    };
    let sender = st.sends(idx);
    st.keep_tcp(idx, &s, sender);
    let (meter, stop, deadline) = (st.meter(idx), st.stop(), st.deadline());
    let f: StreamFn = if sender {
        Box::new(move || file::send_range(&s, &f, range, bufs, deadline, &meter, &stop))
    } else {
        Box::new(move || file::recv_range(&s, &f, range, bufs, IDLE, &meter, &stop))
    };
    st.spawn_job(idx, f);
    Ok(())
}
