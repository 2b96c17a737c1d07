//! Release tooling for `scripts/package.sh`: what the .deb needs that cargo-deb does not make.
//! Pure text transformations, tested here; the script does the file handling.

pub mod changelog;
pub mod date;
