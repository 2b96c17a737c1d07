//! Below the port, as pure functions over bytes: what a pluggable module's memory says
//! ([`eeprom`]: SFF-8472, SFF-8636/8436, CMIS), the requests and replies of ethtool's
//! generic netlink family ([`ethtool`]) and of rtnetlink's VF list ([`vf`]), netlink framing
//! ([`nl`]), and the structs of the SIOCETHTOOL ioctls older kernels answer ([`ioctl`]).
//!
//! No I/O: `linerate-inventory` sends the requests and hands the replies here, and a
//! fixture root hands recorded replies the same way. Every decoder takes any bytes and
//! returns typed data or an error that says what was wrong; none panics (`fuzz/` checks).
//! The typed data is `linerate-facts`'s.

pub mod eeprom;
pub mod ethtool;
pub mod ioctl;
pub mod nl;
pub mod vf;
