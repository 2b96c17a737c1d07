//! What a client makes of a refusal: iperf3's own text for a SERVER_ERROR, and linerate's words
//! for a user (busy, a refused stream, a server error with its code and the server's errno).

use std::io;

use crate::state::ServerError;

impl ServerError {
    /// What an iperf3 client prints for it: `SERVER ERROR - <message>[: <strerror(errno)>]`.
    pub fn iperf3_text(&self) -> String {
        let mut text = format!("SERVER ERROR - {}", self.code.iperf3_message());
        if self.errno > 0 {
            text.push_str(", errno: ");
            text.push_str(&os_error(self.errno));
        }
        text
    }
}

/// `errno` in words, as this host's C library says it (the server's system may number them
/// differently; Linux and the BSDs agree on the common ones).
/// std's text ends with " (os error N)": the number stays, after the words.
fn os_error(errno: i32) -> String {
    io::Error::from_raw_os_error(errno).to_string()
}

/// Why an iperf3 server would not run a test, as a client sees it on the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Iperf3Refusal {
    /// ACCESS_DENIED on the control connection: the server runs another test (iperf3 serves
    /// one at a time). iperf3's client says IEACCESSDENIED (121).
    Busy,
    /// ACCESS_DENIED on a data connection: the server did not take this stream (its cookie was
    /// not the test's, or, in a `--bidir` test, a server before 3.7 that expected half the
    /// streams).
    StreamRefused,
    /// SERVER_ERROR with its codes.
    ServerError(ServerError),
}

impl Iperf3Refusal {
    /// linerate's words for a user; `server` names it as the user gave it (`HOST:PORT`).
    pub fn explain(&self, server: &str) -> String {
        match self {
            Iperf3Refusal::Busy => {
                format!("the iperf3 server at {server} is running another test; try again")
            }
            Iperf3Refusal::StreamRefused => format!(
                "the iperf3 server at {server} refused one of the test's streams (with --bidir: \
                 the server is older than iperf3 3.7, which brought --bidir)"
            ),
            Iperf3Refusal::ServerError(e) => {
                let what = e.code.plain_words().map_or_else(
                    || format!("failed the test: {}", e.code.iperf3_message()),
                    str::to_string,
                );
                let mut text = format!("the iperf3 server at {server} {what} ({}", e.code.cite());
                if e.errno > 0 {
                    text.push_str("; the server's system said: ");
                    text.push_str(&os_error(e.errno));
                }
                text.push(')');
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorCode;

    #[test]
    fn plain_words_for_users() {
        assert_eq!(
            Iperf3Refusal::Busy.explain("nas:5201"),
            "the iperf3 server at nas:5201 is running another test; try again"
        );
        let e = Iperf3Refusal::ServerError(ServerError {
            code: ErrorCode::IETOTALRATE,
            errno: 0,
        });
        assert_eq!(
            e.explain("10.0.0.2:5201"),
            "the iperf3 server at 10.0.0.2:5201 refused the test's total bitrate: it is above \
             the server's limit (--server-bitrate-limit); ask for a lower -b or fewer streams \
             (iperf3 error 27, IETOTALRATE)"
        );
        // A code without plain words falls back on iperf3's message; errno is spelled out.
        let e = Iperf3Refusal::ServerError(ServerError {
            code: ErrorCode(999),
            errno: 98,
        });
        let text = e.explain("h:1");
        assert!(
            text.starts_with("the iperf3 server at h:1 failed the test: int_errno=999"),
            "{text}"
        );
        assert!(text.contains("os error 98"), "{text}");
        // Every code a server sends about a test has words; they complete the sentence.
        for code in [
            5, 6, 7, 8, 12, 20, 27, 37, 114, 117, 141, 142, 144, 160, 208,
        ] {
            let words = ErrorCode(code).plain_words().unwrap();
            assert!(
                words.chars().next().unwrap().is_lowercase(),
                "{code}: {words}"
            );
            assert!(!words.ends_with('.'), "{code}: {words}");
        }
    }

    #[test]
    fn iperf3_text_of_a_server_error() {
        let e = ServerError {
            code: ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED,
            errno: 0,
        };
        // As the captured 3.21 client printed it.
        assert_eq!(
            e.iperf3_text(),
            "SERVER ERROR - client's requested duration exceeds the server's maximum permitted limit"
        );
        assert!(ErrorCode::IERECVPARAMS.appends_errno());
        assert!(!ErrorCode::IEDURATION.appends_errno());
    }
}
