//! Below the port over a soak: the NIC's temperatures and the module's light, as the samples
//! carry them (`PortSample::phy`, read every `linerate_facts::PHY_SAMPLE_PERIOD_S` by the
//! sampler), kept per port in bounded memory: per temperature its first, hottest and last
//! reading and the worst level it reached; the weakest lane's light at its weakest and its
//! worst level; and around each time the link went down, the light just before and just
//! after (at most [`MAX_DOWNS_KEPT`]). Samples themselves are not kept.

use std::collections::BTreeMap;

use linerate_facts::{Level, PhyGauges, RxReading};
use serde::{Deserialize, Serialize};

/// Link downs whose light is kept per port (the count goes on).
pub const MAX_DOWNS_KEPT: usize = 16;
/// Temperatures kept per port (a NIC has a few sensors; more are a peer's noise).
pub const MAX_TEMPERATURES: usize = 16;

/// One temperature over the soak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TempTrack {
    /// `module`, or the NIC's sensor (`mlx5 asic`).
    pub what: String,
    /// (seconds into the soak, °C).
    pub first: (f64, f64),
    pub hottest: (f64, f64),
    pub last: (f64, f64),
    /// The limit it is judged against, °C (the module's high warning, the sensor's `_max`,
    /// else `_crit`), as last read.
    pub limit_c: Option<f64>,
    /// The worst level it reached, and when first.
    pub worst: Level,
    pub worst_at_s: f64,
}

/// The weakest lane's light over the soak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RxTrack {
    /// The weakest reading and when.
    pub weakest: (f64, RxReading),
    /// The worst level it reached, and when first.
    pub worst: Level,
    pub worst_at_s: f64,
    pub readings: u64,
}

/// The light around one link down: the last reading before the interval in which the link
/// went down, and the first after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownLight {
    /// When the sample that saw the link-down counter rise was taken.
    pub at_s: f64,
    pub before: Option<(f64, RxReading)>,
    pub after: Option<(f64, RxReading)>,
}

/// One port's PHY readings over the soak.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhyTrack {
    pub temperatures: Vec<TempTrack>,
    pub rx: Option<RxTrack>,
    pub downs: Vec<DownLight>,
    /// Link downs seen, kept or not.
    pub downs_total: u64,
    /// The latest light read, for the next link down.
    last_rx: Option<(f64, RxReading)>,
}

impl PhyTrack {
    /// Takes the readings `g` of the sample at `t_s`.
    pub(crate) fn read(&mut self, t_s: f64, g: &PhyGauges) {
        for r in g.temperatures() {
            let room = self.temperatures.len() < MAX_TEMPERATURES;
            match self.temperatures.iter_mut().find(|t| t.what == r.what) {
                Some(t) => {
                    if r.c > t.hottest.1 {
                        t.hottest = (t_s, r.c);
                    }
                    t.last = (t_s, r.c);
                    t.limit_c = r.limit_c;
                    if r.level > t.worst {
                        (t.worst, t.worst_at_s) = (r.level, t_s);
                    }
                }
                None if room => {
                    self.temperatures.push(TempTrack {
                        what: r.what,
                        first: (t_s, r.c),
                        hottest: (t_s, r.c),
                        last: (t_s, r.c),
                        limit_c: r.limit_c,
                        worst: r.level,
                        worst_at_s: t_s,
                    });
                }
                None => {}
            }
        }
        let Some(rx) = g.weakest_rx() else { return };
        match &mut self.rx {
            Some(t) => {
                if rx.mw < t.weakest.1.mw {
                    t.weakest = (t_s, rx);
                }
                if rx.level > t.worst {
                    (t.worst, t.worst_at_s) = (rx.level, t_s);
                }
                t.readings += 1;
            }
            None => {
                self.rx = Some(RxTrack {
                    weakest: (t_s, rx),
                    worst: rx.level,
                    worst_at_s: t_s,
                    readings: 1,
                });
            }
        }
        for d in self.downs.iter_mut().filter(|d| d.after.is_none()) {
            d.after = Some((t_s, rx));
        }
        self.last_rx = Some((t_s, rx));
    }

    /// The link went down in the interval closed at `t_s`.
    pub(crate) fn link_down(&mut self, t_s: f64) {
        self.downs_total += 1;
        if self.downs.len() < MAX_DOWNS_KEPT {
            self.downs.push(DownLight {
                at_s: t_s,
                before: self.last_rx,
                after: None,
            });
        }
    }
}

/// Every port's [`PhyTrack`], by (end, device, port).
pub(crate) type PhyTracks = BTreeMap<(linerate_proto::soak::End, String, String), PhyTrack>;
