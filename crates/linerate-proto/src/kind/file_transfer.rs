//! `file_transfer`: disk → network → disk. The client sends a file in contiguous ranges, one per
//! stream; the server writes it into the directory its operator allowed.

use super::{limit_length, streams_words, EndsBy, Facts, Measures, Spec, Takes};
use crate::defaults;
use crate::params::{
    FileSpec, Limits, Param, Refusal, RefusalKind, ShapeError, TestParams, FILE_BUFFERS,
};

pub(super) struct FileTransfer;

const FACTS: Facts = Facts {
    name: "file_transfer",
    result_kinds: &["file_transfer"],
    measures: Measures::Copy,
    ends_by: EndsBy::Data,
    takes: Takes {
        file: true,
        rdma: false,
        discard: false,
        no_rcvlowat: false,
        soak: false,
    },
    default_bitrate_bps: defaults::TCP_BITRATE_BPS,
    default_duration_ms: defaults::FILE_DURATION_MS,
};

impl Spec for FileTransfer {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn default_length(&self, _: &TestParams) -> u32 {
        defaults::FILE_LENGTH
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    fn connections(&self, p: &TestParams) -> u32 {
        p.streams
    }

    /// Each stream's buffers: the disk and the network each work on their own while the other
    /// does.
    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        super::per_connection_memory(p) * u64::from(FILE_BUFFERS)
    }

    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError> {
        let e = |param, message: String| Err(ShapeError::new(param, &message));
        let Some(f) = &p.file else {
            return e(
                Param::File,
                "a file transfer needs the file's name and size".into(),
            );
        };
        FileSpec::check_name(&f.name).or_else(|m| e(Param::FileName, m))?;
        if f.size == 0 {
            return e(Param::File, "the file is empty: nothing to transfer".into());
        }
        if p.direction != crate::Direction::Send {
            return e(
                Param::Direction,
                "a file transfer goes from the client to the server (no -R or --bidir)".into(),
            );
        }
        if u64::from(p.streams) > f.size {
            return e(
                Param::Streams,
                format!(
                    "{} streams for a {}-byte file: use at most one stream per byte",
                    p.streams, f.size
                ),
            );
        }
        if p.omit_ms > 0 {
            return e(
                Param::Omit,
                "--omit does not apply to a file transfer: every byte of the file counts".into(),
            );
        }
        Ok(())
    }

    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        limit_length(p, l)?;
        match &p.file {
            Some(f) if l.max_file_bytes > 0 && f.size > l.max_file_bytes => Err(Refusal::new(
                RefusalKind::OverLimit,
                format!(
                    "the file is {} bytes; this server accepts at most {} (serve --max-file-size)",
                    f.size, l.max_file_bytes
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The size and not the name: doctor's copy has a random one, and the name is in the
    /// parameters (and bench's user gave it). Short, for doctor's table of tests.
    fn words(&self, p: &TestParams) -> String {
        let f = p.file.as_ref();
        format!(
            "file copy to the server, {}{}{}",
            decimal_bytes(f.map_or(0, |f| f.size)),
            if p.streams > 1 {
                format!(", {}", streams_words(p.streams))
            } else {
                String::new()
            },
            // Durable is the default (its time is shown with the copy's); not durable is said.
            if f.is_some_and(|f| !f.fsync) {
                ", not made durable (no fsync)"
            } else {
                ""
            }
        )
    }
}

/// `134 MB`, `10.7 GB`: a file's size as `ls -h --si` and disk vendors say it.
fn decimal_bytes(b: u64) -> String {
    let b = b as f64;
    let (v, unit) = if b >= 1e12 {
        (b / 1e12, "TB")
    } else if b >= 1e9 {
        (b / 1e9, "GB")
    } else if b >= 1e6 {
        (b / 1e6, "MB")
    } else if b >= 1e3 {
        (b / 1e3, "kB")
    } else {
        (b, "B")
    };
    format!("{} {unit}", linerate_units::fmt_sig(v))
}
