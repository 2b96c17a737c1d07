//! iperf3's error codes (`i_errno`), as a server sends them after SERVER_ERROR and a client
//! prints them, with iperf3's own text and linerate's plain words for a user.
//!
//! The table holds every code of iperf3 3.21's `iperf_api.h`, each with the release that first
//! gave it its value (read tag by tag from esnet/iperf, 3.0.1 to 3.21) and the message of 3.21's
//! `iperf_strerror` (older releases word a few differently, e.g. 3.1.3's IEDURATION "test
//! duration too long (maximum = 86400 seconds)"). No code was ever renumbered to another name
//! except 155, which was IEPTHREADSIGMASK in 3.18 only (it is 159 from 3.19 on, and 155 became
//! IESETCNTLKA). A client prints `int_errno=N` for a code it does not know, so a server picks
//! the oldest code that fits ([`ErrorCode::understood_by`]).

use std::fmt;

use crate::version::Version;

/// An iperf3 error code (`i_errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ErrorCode(pub i32);

struct Entry {
    code: i32,
    name: &'static str,
    since: Version,
    /// iperf3 appends `": "` and `strerror(errno)` to the message (its `perr`/`herr`).
    appends_errno: bool,
    /// `iperf_strerror`'s text in 3.21; `None` where it has no case (it prints `int_errno=N`).
    message: Option<&'static str>,
    /// What linerate tells a user, completing "the iperf3 server at HOST:PORT ...": for the
    /// codes a server sends about a test; `None` for the client's own errors.
    plain: Option<&'static str>,
}

macro_rules! error_codes {
    ($( $name:ident = $code:literal, ($a:literal, $b:literal, $c:literal), $errno:literal,
        $msg:expr, $plain:expr; )*) => {
        #[allow(missing_docs)]
        impl ErrorCode {
            $( pub const $name: ErrorCode = ErrorCode($code); )*
        }

        static TABLE: &[Entry] = &[
            $( Entry {
                code: $code,
                name: stringify!($name),
                since: Version::new($a, $b, $c),
                appends_errno: $errno,
                message: $msg,
                plain: $plain,
            }, )*
        ];
    };
}

error_codes! {
    IENONE = 0, (3, 0, 1), false,
        Some("no error"),
        None;
    IESERVCLIENT = 1, (3, 0, 1), false,
        Some("cannot be both server and client"),
        None;
    IENOROLE = 2, (3, 0, 1), false,
        Some("must either be a client (-c) or server (-s)"),
        None;
    IESERVERONLY = 3, (3, 0, 1), false,
        Some("some option you are trying to set is server only"),
        None;
    IECLIENTONLY = 4, (3, 0, 1), false,
        Some("some option you are trying to set is client only"),
        None;
    IEDURATION = 5, (3, 0, 1), false,
        Some("test duration valid values are 0 to 86400 seconds"),
        Some("does not allow a test this long: ask for a shorter -t (iperf3 allows 0 to 86400 s; a server may allow less)");
    IENUMSTREAMS = 6, (3, 0, 1), false,
        Some("number of parallel streams too large (maximum = 128)"),
        Some("does not allow this many parallel streams: ask for fewer (-P; iperf3 allows 1 to 128, a server may allow fewer)");
    IEBLOCKSIZE = 7, (3, 0, 1), false,
        Some("block size too large (maximum = 1048576 bytes)"),
        Some("does not allow writes this large: ask for a smaller -l (iperf3 allows at most 1 MiB for TCP)");
    IEBUFSIZE = 8, (3, 0, 1), false,
        Some("socket buffer size too large (maximum = 536870912 bytes)"),
        Some("does not allow a socket buffer this large: ask for a smaller -w (iperf3 allows at most 512 MiB)");
    IEINTERVAL = 9, (3, 0, 1), false,
        Some("invalid report interval (min = 0.1, max = 60 seconds)"),
        None;
    IEMSS = 10, (3, 0, 1), false,
        Some("TCP MSS too large (maximum = 32767 bytes)"),
        Some("does not allow an MSS this large: ask for a smaller -M (at most 32767 bytes)");
    IENOSENDFILE = 11, (3, 0, 1), false,
        Some("this OS does not support sendfile"),
        Some("cannot send with zero copy (-Z) on its system");
    IEOMIT = 12, (3, 0, 1), false,
        Some("bogus value for --omit (maximum = 600 seconds)"),
        Some("does not allow this much omitted warm-up: ask for a shorter -O (iperf3 allows 0 to 600 s)");
    IEUNIMP = 13, (3, 0, 1), false,
        Some("an option you are trying to set is not implemented yet"),
        Some("does not implement an option this test asked for");
    IEFILE = 14, (3, 0, 1), true,
        Some("unable to open -F file"),
        None;
    IEBURST = 15, (3, 0, 1), false,
        Some("invalid burst count (maximum = 1000)"),
        Some("does not allow this burst count (-b RATE/COUNT; iperf3 allows 1 to 1000)");
    IEENDCONDITIONS = 16, (3, 0, 1), false,
        Some("only one test end condition (-t, -n, -k) may be specified"),
        None;
    IELOGFILE = 17, (3, 1, 0), true,
        Some("unable to open log file"),
        None;
    IENOSCTP = 18, (3, 1, 0), false,
        Some("no SCTP support available"),
        Some("has no SCTP support");
    IEBIND = 19, (3, 1, 0), false,
        Some("--bind must be specified to use --cport"),
        None;
    IEUDPBLOCKSIZE = 20, (3, 0, 11), false,
        Some("block size invalid (minimum = 16 bytes, maximum = 65507 bytes)"),
        Some("does not allow this UDP datagram size: -l must be 16 to 65507 bytes");
    IEBADTOS = 21, (3, 1, 3), false,
        Some("bad TOS value (must be between 0 and 255 inclusive)"),
        Some("does not allow this TOS/DSCP value: it must be 0 to 255");
    IESETCLIENTAUTH = 22, (3, 2, 0), false,
        Some("you must specify a username, password, and path to a valid RSA public key"),
        None;
    IESETSERVERAUTH = 23, (3, 2, 0), false,
        Some("you must specify a path to a valid RSA private key and a user credential file"),
        None;
    IEBADFORMAT = 24, (3, 2, 0), false,
        Some("bad format specifier (valid formats are in the set [kmgtKMGT])"),
        None;
    IEREVERSEBIDIR = 25, (3, 7, 0), false,
        Some("cannot be both reverse and bidirectional"),
        Some("cannot run a test both reverse (-R) and bidirectional (--bidir)");
    IEBADPORT = 26, (3, 7, 0), false,
        Some("port number must be between 1 and 65535 inclusive"),
        None;
    IETOTALRATE = 27, (3, 9, 0), false,
        Some("total required bandwidth is larger than server limit"),
        Some("refused the test's total bitrate: it is above the server's limit (--server-bitrate-limit); ask for a lower -b or fewer streams");
    IETOTALINTERVAL = 28, (3, 9, 0), false,
        Some("invalid time interval for calculating average data rate"),
        None;
    IESKEWTHRESHOLD = 29, (3, 10, 0), false,
        Some("skew threshold must be a positive number"),
        None;
    IEIDLETIMEOUT = 30, (3, 10, 0), false,
        Some("idle timeout parameter is not positive or larger than allowed limit"),
        None;
    IERCVTIMEOUT = 31, (3, 10, 0), true,
        Some("receive timeout value is incorrect or not in range"),
        None;
    IERVRSONLYRCVTIMEOUT = 32, (3, 10, 0), true,
        Some("client receive timeout is valid only in receiving mode"),
        None;
    IESNDTIMEOUT = 33, (3, 12, 0), true,
        Some("send timeout value is incorrect or not in range"),
        None;
    IEUDPFILETRANSFER = 34, (3, 14, 0), false,
        Some("cannot transfer file using UDP"),
        Some("cannot run UDP tests: it sends or receives a file (-F)");
    IESERVERAUTHUSERS = 35, (3, 16, 0), false,
        Some("cannot access authorized users file"),
        None;
    IECNTLKA = 36, (3, 19, 0), true,
        Some("control connection Keepalive period should be larger than the full retry period (interval * count)"),
        None;
    IEMAXSERVERTESTDURATIONEXCEEDED = 37, (3, 20, 0), false,
        Some("client's requested duration exceeds the server's maximum permitted limit"),
        Some("refused the test's length: it is above the server's limit (--server-max-duration); ask for a shorter -t (a test without -t is refused too)");
    IEUNITVAL = 38, (3, 20, 0), false,
        Some("invalid unit value or suffix"),
        None;
    IENEWTEST = 100, (3, 0, 1), true,
        Some("unable to create a new test"),
        Some("could not create a new test");
    IEINITTEST = 101, (3, 0, 1), true,
        Some("test initialization failed"),
        Some("could not set up the test");
    IELISTEN = 102, (3, 0, 1), true,
        Some("unable to start listener for connections"),
        Some("could not listen for the test's connections");
    IECONNECT = 103, (3, 0, 1), true,
        Some("unable to connect to server - server may have stopped running or use a different port, firewall issue, etc."),
        None;
    IEACCEPT = 104, (3, 0, 1), true,
        Some("unable to accept connection from client"),
        Some("could not accept a connection");
    IESENDCOOKIE = 105, (3, 0, 1), true,
        Some("unable to send cookie to server"),
        None;
    IERECVCOOKIE = 106, (3, 0, 1), true,
        Some("unable to receive cookie at server"),
        Some("did not receive the cookie of this client");
    IECTRLWRITE = 107, (3, 0, 1), true,
        Some("unable to write to the control socket"),
        None;
    IECTRLREAD = 108, (3, 0, 1), true,
        Some("unable to read from the control socket"),
        Some("could not read from the control connection");
    IECTRLCLOSE = 109, (3, 0, 1), false,
        Some("control socket has closed unexpectedly"),
        Some("saw the control connection close unexpectedly");
    IEMESSAGE = 110, (3, 0, 1), false,
        Some("received an unknown control message (ensure other side is iperf3 and not iperf)"),
        Some("received a control message it did not understand (is this end speaking iperf3?)");
    IESENDMESSAGE = 111, (3, 0, 1), true,
        Some("unable to send control message - port may not be available, the other side may have stopped running, etc."),
        None;
    IERECVMESSAGE = 112, (3, 0, 1), true,
        Some("unable to receive control message - port may not be available, the other side may have stopped running, etc."),
        None;
    IESENDPARAMS = 113, (3, 0, 1), true,
        Some("unable to send parameters to server"),
        None;
    IERECVPARAMS = 114, (3, 0, 1), true,
        Some("unable to receive parameters from client"),
        Some("could not read the test's parameters (malformed, or longer than it accepts)");
    IEPACKAGERESULTS = 115, (3, 0, 1), true,
        Some("unable to package results"),
        None;
    IESENDRESULTS = 116, (3, 0, 1), true,
        Some("unable to send results"),
        Some("could not send its results");
    IERECVRESULTS = 117, (3, 0, 1), true,
        Some("unable to receive results"),
        Some("could not read the results of this client");
    IESELECT = 118, (3, 0, 1), true,
        Some("select failed"),
        Some("failed waiting on its connections");
    IECLIENTTERM = 119, (3, 0, 1), false,
        Some("the client has terminated"),
        Some("says the client ended the test");
    IESERVERTERM = 120, (3, 0, 1), false,
        Some("the server has terminated"),
        None;
    IEACCESSDENIED = 121, (3, 0, 1), false,
        Some("the server is busy running a test. try again later"),
        None;
    IESETNODELAY = 122, (3, 0, 1), true,
        Some("unable to set TCP/SCTP NODELAY"),
        Some("could not set TCP_NODELAY (-N)");
    IESETMSS = 123, (3, 0, 1), true,
        Some("unable to set TCP/SCTP MSS"),
        Some("could not set the MSS (-M)");
    IESETBUF = 124, (3, 0, 1), true,
        Some("unable to set socket buffer size"),
        Some("could not set the socket buffer size (-w)");
    IESETTOS = 125, (3, 0, 1), true,
        Some("unable to set IP TOS"),
        Some("could not set the TOS (-S)");
    IESETCOS = 126, (3, 0, 1), true,
        Some("unable to set IPv6 traffic class"),
        Some("could not set the IPv6 traffic class (-S)");
    IESETFLOW = 127, (3, 0, 1), false,
        Some("unable to set IPv6 flow label"),
        Some("could not set the IPv6 flow label (-L)");
    IEREUSEADDR = 128, (3, 0, 1), true,
        Some("unable to reuse address on socket"),
        None;
    IENONBLOCKING = 129, (3, 0, 1), true,
        Some("unable to set socket to non-blocking"),
        None;
    IESETWINDOWSIZE = 130, (3, 0, 1), true,
        Some("unable to set socket window size"),
        Some("could not set the window size (-w)");
    IEPROTOCOL = 131, (3, 0, 1), false,
        Some("protocol does not exist"),
        Some("does not support the test's protocol");
    IEAFFINITY = 132, (3, 0, 1), true,
        Some("unable to set CPU affinity"),
        Some("could not pin itself to the CPU asked for (-A)");
    IEDAEMON = 133, (3, 0, 1), true,
        Some("unable to become a daemon"),
        None;
    IESETCONGESTION = 134, (3, 0, 1), false,
        Some("unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host"),
        Some("does not have the congestion control algorithm asked for (-C)");
    IEPIDFILE = 135, (3, 1, 0), true,
        Some("unable to write PID file"),
        None;
    IEV6ONLY = 136, (3, 0, 5), true,
        Some("Unable to set/reset IPV6_V6ONLY"),
        Some("could not set IPV6_V6ONLY");
    IESETSCTPDISABLEFRAG = 137, (3, 1, 0), true,
        Some("unable to set SCTP_DISABLE_FRAGMENTS"),
        None;
    IESETSCTPNSTREAM = 138, (3, 1, 0), true,
        Some("unable to set SCTP_INIT num of SCTP streams"),
        None;
    IESETSCTPBINDX = 139, (3, 1, 0), true,
        None,
        None;
    IESETPACING = 140, (3, 1, 3), true,
        Some("unable to set socket pacing"),
        Some("could not set socket pacing (--fq-rate)");
    IESETBUF2 = 141, (3, 2, 0), false,
        Some("socket buffer size not set correctly"),
        Some("could not get the socket buffer size asked for (-w): its system allows less (net.core.rmem_max and wmem_max); ask for a smaller -w");
    IEAUTHTEST = 142, (3, 2, 0), false,
        Some("test authorization failed"),
        Some("refused the test's authorization: it requires iperf3's RSA authentication (--username, --rsa-public-key-path), or refused the credentials given");
    IEBINDDEV = 143, (3, 10, 0), false,
        Some("Unable to bind-to-device (check perror, maybe permissions?)"),
        Some("could not bind to the device asked for");
    IENOMSG = 144, (3, 10, 0), false,
        Some("idle timeout for receiving data"),
        Some("received no data for too long (its --rcv-timeout) and ended the test");
    IESETDONTFRAGMENT = 145, (3, 10, 0), false,
        Some("unable to set IP Do-Not-Fragment flag"),
        Some("could not set don't-fragment (--dont-fragment)");
    IEBINDDEVNOSUPPORT = 146, (3, 11, 0), false,
        Some("`<ip>%<dev>` is not supported as system does not support bind to device"),
        None;
    IEHOSTDEV = 147, (3, 11, 0), false,
        Some("host device name (ip%<dev>) is supported (and required) only for IPv6 link-local address"),
        None;
    IESETUSERTIMEOUT = 148, (3, 12, 0), true,
        Some("unable to set TCP USER_TIMEOUT"),
        Some("could not set TCP_USER_TIMEOUT");
    IEPTHREADCREATE = 150, (3, 16, 0), true,
        Some("unable to create thread"),
        Some("could not start a thread for a stream");
    IEPTHREADCANCEL = 151, (3, 16, 0), true,
        Some("unable to cancel thread"),
        Some("could not stop a stream's thread");
    IEPTHREADJOIN = 152, (3, 16, 0), true,
        Some("unable to join thread"),
        Some("could not stop a stream's thread");
    IEPTHREADATTRINIT = 153, (3, 16, 0), true,
        Some("unable to create thread attributes"),
        Some("could not start a thread for a stream");
    IEPTHREADATTRDESTROY = 154, (3, 16, 0), false,
        Some("unable to destroy thread attributes"),
        Some("could not clean up a stream's thread");
    IESETCNTLKA = 155, (3, 19, 0), true,
        Some("unable to set socket keepalive (SO_KEEPALIVE) option"),
        None;
    IESETCNTLKAKEEPIDLE = 156, (3, 19, 0), true,
        Some("unable to set socket keepalive TCP period (TCP_KEEPIDLE) option"),
        None;
    IESETCNTLKAINTERVAL = 157, (3, 19, 0), true,
        Some("unable to set/get socket keepalive TCP retry interval (TCP_KEEPINTVL) option"),
        None;
    IESETCNTLKACOUNT = 158, (3, 19, 0), true,
        Some("unable to set/get socket keepalive TCP number of retries (TCP_KEEPCNT) option"),
        None;
    IEPTHREADSIGMASK = 159, (3, 19, 0), false,
        Some("unable to change mask of blocked signals"),
        Some("could not start a thread for a stream");
    IESERVERTESTDURATIONEXPIRED = 160, (3, 21, 0), true,
        Some("server test duration expired"),
        Some("ended the test: it ran past the time the server allows a test");
    IECREATESTREAM = 200, (3, 0, 1), true,
        Some("unable to create a new stream"),
        Some("could not create a stream");
    IEINITSTREAM = 201, (3, 0, 1), true,
        Some("unable to initialize stream"),
        Some("could not set up a stream");
    IESTREAMLISTEN = 202, (3, 0, 1), true,
        Some("unable to start stream listener"),
        Some("could not listen for the test's streams");
    IESTREAMCONNECT = 203, (3, 0, 1), true,
        Some("unable to connect stream"),
        Some("could not connect a stream");
    IESTREAMACCEPT = 204, (3, 0, 1), true,
        Some("unable to accept stream connection"),
        Some("could not accept a stream");
    IESTREAMWRITE = 205, (3, 0, 1), true,
        Some("unable to write to stream socket"),
        Some("could not write to a stream");
    IESTREAMREAD = 206, (3, 0, 1), true,
        Some("unable to read from stream socket"),
        Some("could not read from a stream");
    IESTREAMCLOSE = 207, (3, 0, 1), false,
        Some("stream socket has closed unexpectedly"),
        Some("saw a stream close unexpectedly");
    IESTREAMID = 208, (3, 0, 1), false,
        Some("stream has an invalid id"),
        Some("received results for a stream it does not know");
    IENEWTIMER = 300, (3, 0, 1), true,
        Some("unable to create new timer"),
        Some("could not create a timer");
    IEUPDATETIMER = 301, (3, 0, 1), true,
        Some("unable to update timer"),
        None;
}

impl ErrorCode {
    fn entry(self) -> Option<&'static Entry> {
        TABLE.iter().find(|e| e.code == self.0)
    }

    /// Every code iperf3 3.21 defines, in numeric order.
    pub fn all() -> impl Iterator<Item = ErrorCode> {
        TABLE.iter().map(|e| ErrorCode(e.code))
    }

    /// iperf3's name (`IEDURATION`); `None` for a code no release defines.
    pub fn name(self) -> Option<&'static str> {
        self.entry().map(|e| e.name)
    }

    /// The first release that gives this code its meaning.
    pub fn since(self) -> Option<Version> {
        self.entry().map(|e| e.since)
    }

    /// Whether a client of this version prints this code's message (an older one prints
    /// `int_errno=N`).
    pub fn understood_by(self, client: Version) -> bool {
        self.since().is_some_and(|since| client >= since)
    }

    /// This code for a client that understands it, else `older` (a code every release since
    /// 3.0 knows, chosen by the caller to say the same thing less precisely). A client whose
    /// version is unknown (no `client_version`, or one that does not parse) gets `older`.
    #[must_use]
    pub fn or_older(self, client: Option<Version>, older: ErrorCode) -> ErrorCode {
        if client.is_some_and(|v| self.understood_by(v)) {
            self
        } else {
            older
        }
    }

    /// What an iperf3 client prints for it (3.21's wording), without the `errno` part.
    pub fn iperf3_message(self) -> String {
        match self.entry().and_then(|e| e.message) {
            Some(m) => m.to_string(),
            None => format!("int_errno={}", self.0),
        }
    }

    /// Whether iperf3 adds the server's `errno` to the message.
    pub fn appends_errno(self) -> bool {
        self.entry().is_none_or(|e| e.appends_errno)
    }

    /// linerate's words for it, completing "the iperf3 server at HOST:PORT ...".
    pub fn plain_words(self) -> Option<&'static str> {
        self.entry().and_then(|e| e.plain)
    }
}

impl ErrorCode {
    /// `iperf3 error 27, IETOTALRATE`, to cite it after words.
    pub fn cite(self) -> String {
        match self.name() {
            Some(name) => format!("iperf3 error {}, {name}", self.0),
            None => format!("iperf3 error {}", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_ordered_unique_and_complete() {
        let codes: Vec<i32> = ErrorCode::all().map(|c| c.0).collect();
        assert_eq!(codes.len(), 110, "every code of 3.21's iperf_api.h");
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "ordered and unique");
        for code in ErrorCode::all() {
            let name = code.name().unwrap();
            assert!(name.starts_with("IE"), "{name}");
            assert!(code.since().unwrap() >= Version::new(3, 0, 1));
            assert!(!code.iperf3_message().is_empty());
        }
    }

    #[test]
    fn iperf3s_own_words() {
        assert_eq!(ErrorCode::IEACCESSDENIED.0, 121);
        assert_eq!(
            ErrorCode::IEACCESSDENIED.iperf3_message(),
            "the server is busy running a test. try again later"
        );
        assert_eq!(
            ErrorCode::IEDURATION.iperf3_message(),
            "test duration valid values are 0 to 86400 seconds"
        );
        assert_eq!(
            ErrorCode::IEUDPBLOCKSIZE.iperf3_message(),
            "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)"
        );
        assert_eq!(
            ErrorCode::IETOTALRATE.iperf3_message(),
            "total required bandwidth is larger than server limit"
        );
        // No case in iperf_strerror, and unknown codes: what iperf3 prints.
        assert_eq!(ErrorCode::IESETSCTPBINDX.iperf3_message(), "int_errno=139");
        assert_eq!(ErrorCode(999).iperf3_message(), "int_errno=999");
        assert_eq!(ErrorCode(999).name(), None);
        assert_eq!(ErrorCode::IEDURATION.to_string(), "5 (IEDURATION)");
    }

    #[test]
    fn which_clients_understand_a_code() {
        let v = |s| Version::parse(s).unwrap();
        assert!(ErrorCode::IEDURATION.understood_by(v("3.0.1")));
        assert!(ErrorCode::IENUMSTREAMS.understood_by(v("3.1.3")));
        assert!(!ErrorCode::IETOTALRATE.understood_by(v("3.7")));
        assert!(ErrorCode::IETOTALRATE.understood_by(v("3.9")));
        assert!(!ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED.understood_by(v("3.19.1")));
        assert!(ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED.understood_by(v("3.20")));
        assert!(ErrorCode::IEAUTHTEST.understood_by(v("3.2")));
        assert!(
            !ErrorCode::IEPTHREADSIGMASK.understood_by(v("3.18")),
            "155 in 3.18"
        );
        assert!(!ErrorCode(999).understood_by(v("3.21")));
        // The older code for a client that would print int_errno=N.
        let total = ErrorCode::IETOTALRATE;
        assert_eq!(
            total.or_older(Some(v("3.9")), ErrorCode::IENEWTEST),
            ErrorCode::IETOTALRATE
        );
        assert_eq!(
            total.or_older(Some(v("3.7")), ErrorCode::IENEWTEST),
            ErrorCode::IENEWTEST
        );
        assert_eq!(
            total.or_older(None, ErrorCode::IENEWTEST),
            ErrorCode::IENEWTEST
        );
    }
}
