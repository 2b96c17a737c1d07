//! Prints what libibverbs says about every RDMA device and port ([`linerate_rdma::verbs::query`])
//! as pretty JSON, to compare with `ibv_devinfo -v`. GUIDs are also printed the way ibv_devinfo
//! prints them, on stderr.
//!
//! ```text
//! cargo run -p linerate-rdma --example verbs_query
//! ```

use std::io::Write;
use std::process::ExitCode;

use linerate_rdma::verbs;

fn main() -> ExitCode {
    match verbs::query() {
        Ok(devices) => {
            for d in &devices {
                eprintln!(
                    "{}: node_guid {} sys_image_guid {}",
                    d.name,
                    verbs::guid_string(d.node_guid),
                    verbs::guid_string(d.sys_image_guid)
                );
            }
            let json = serde_json::to_string_pretty(&devices).expect("plain data serializes");
            // A closed stdout (`| head`) ends the program quietly, without a panic.
            match writeln!(std::io::stdout().lock(), "{json}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Err(e) => {
            eprintln!("verbs_query: {e}");
            ExitCode::FAILURE
        }
    }
}
