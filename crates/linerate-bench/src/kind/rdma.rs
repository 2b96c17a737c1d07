//! `rdma`: queue pairs through libfabric, connected and driven by the engine of
//! `linerate-rdma` (`crate::rdma`): initiators on the client, targets on the server.

use linerate_proto::{Refusal, SideResults, TestParams};
use linerate_results::TestResult;

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;

pub(super) struct Rdma;

impl Kind for Rdma {
    fn ends(&self) -> Ends {
        Ends::Rdma
    }

    /// libfabric, its provider and device are checked when the server listens (a refusal of
    /// kind `unsupported` names what is missing).
    fn admit(&self, _: &TestParams, _: &ServerConfig) -> Result<(), Refusal> {
        Ok(())
    }

    fn prepare(&self, _: &TestParams, _: &ServerConfig) -> Result<Held, Refusal> {
        nothing_held()
    }

    fn finish(&self, _: Held, _: &TestParams, _: &mut SideResults) -> Option<FileLog> {
        None
    }

    fn assemble(&self, t: &mut TestResult, run: &ClientRun) {
        if let (Some(spec), Some(rr)) = (run.params.rdma.as_ref(), run.rdma.as_ref()) {
            crate::results::rdma(t, spec, rr, run);
        }
    }
}
