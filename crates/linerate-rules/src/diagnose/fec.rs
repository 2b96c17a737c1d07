//! Both ends' FEC together: `fec.mismatch`. Each end's inventory judges its own FEC against
//! its link (`fec.missing`); only doctor sees both ends, and two ends on different FEC modes
//! cannot be one cable between them: a link whose two ends disagree on FEC does not come up,
//! or comes up and corrupts frames. So either a switch is between them, and FEC is agreed per
//! hop (each host with its switch port), or the link is up against the standard and the
//! uncorrectable blocks say so.

use std::fmt::Write as _;

use linerate_facts::{EndFacts, FecEnd, FecMode, Finding, FindingId, Severity};
use linerate_units::fmt_num;

use super::context::Ctx;
use super::registry::{rule, FromFacts};

/// `fec.mismatch`: the two ends' ports run different FEC modes. A warning when either end
/// counted uncorrectable blocks (the hop that disagrees loses frames), else information: the
/// ends are not one cable apart, and each host must agree with the switch port it faces.
impl FromFacts for rule::FecMismatch {
    type Output = Option<Finding>;

    fn run(self, c: &Ctx<'_>) -> Option<Finding> {
        let i = c.i;
        let remote = i.remote.as_ref()?;
        let (lf, rf) = (i.local.fec.as_ref()?, remote.fec.as_ref()?);
        if lf.active == rf.active {
            return None;
        }
        let end = |name: &str, e: &EndFacts, f: &FecEnd| {
            let speed = f
                .speed_mbps
                .map(|m| format!(" at {} Gb/s", fmt_num(f64::from(m) / 1000.0)))
                .unwrap_or_default();
            format!(
                "the {name} {} runs {}{speed}",
                e.netdev.as_deref().unwrap_or("port"),
                words(f.active)
            )
        };
        let lost: Vec<String> = [("local", lf), ("remote", rf)]
            .into_iter()
            .filter_map(|(name, f)| {
                let n = f.uncorrectable_blocks.filter(|n| *n > 0)?;
                Some(format!("{name}: {n} uncorrectable blocks"))
            })
            .collect();
        let mut message = format!(
            "{} and {}: two ends on different FEC cannot be one cable apart (both ends of a link must run the same FEC, or it does not come up). ",
            end("local", &i.local, lf),
            end("remote", remote, rf)
        );
        let severity = if lost.is_empty() {
            message.push_str("With a switch between them FEC is agreed per hop, so this is each host's choice with its own switch port: nothing is lost here, but a host whose switch port runs another mode, or none where the link's standard needs it (`fec.missing`), will be");
            Severity::Info
        } else {
            let _ = write!(
                message,
                "FEC could not correct every block ({}): the hop that disagrees, or that runs without FEC, corrupts frames, which become drops and retransmits",
                lost.join(", ")
            );
            Severity::Warning
        };
        let nd = |e: &EndFacts| e.netdev.clone().unwrap_or_else(|| "IFACE".into());
        let mut f = Finding::new(FindingId::FecMismatch, severity, "path")
            .evidence(
                format!("local `ethtool --show-fec {}`", nd(&i.local)),
                lf.active.as_str(),
            )
            .evidence(
                format!("remote `ethtool --show-fec {}`", nd(remote)),
                rf.active.as_str(),
            );
        for l in &lost {
            f = f.evidence("uncorrectable", l.clone());
        }
        Some(f.message(message).fix(format!(
            "Set the same FEC on each host and the switch port it faces: `ethtool --set-fec {} encoding {}` (or `auto` where both ends negotiate it), and the switch port's FEC to match (e.g. `fec rs` / `forward-error-correction reed-solomon`); RS-FEC at 25 Gb/s lanes and above.",
            nd(if lf.active == FecMode::None { &i.local } else { remote }),
            fix_mode(lf.active, rf.active)
        )))
    }
}

fn words(m: FecMode) -> String {
    match m {
        FecMode::None => "no FEC".into(),
        m => format!("{} FEC", m.as_str()),
    }
}

/// The mode to set on the end that differs: the stronger of the two (RS over BASE-R over
/// none), in ethtool's `encoding` words.
fn fix_mode(a: FecMode, b: FecMode) -> &'static str {
    let rank = |m: FecMode| match m {
        FecMode::Rs => 3,
        FecMode::Llrs => 2,
        FecMode::Baser => 1,
        FecMode::None | FecMode::Auto => 0,
    };
    match if rank(a) >= rank(b) { a } else { b } {
        FecMode::Rs => "rs",
        FecMode::Llrs => "llrs",
        FecMode::Baser => "baser",
        FecMode::None => "off",
        FecMode::Auto => "auto",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic};

    fn run(local: Option<FecMode>, remote: Option<FecMode>, lost: u64) -> Option<Finding> {
        let mut i = input(nic("eth0", 25.0), Some(nic("eth1", 25.0)), Vec::new());
        let fec = |m: Option<FecMode>| {
            m.map(|active| FecEnd {
                active,
                speed_mbps: Some(25_000),
                uncorrectable_blocks: Some(lost),
            })
        };
        i.local.fec = fec(local);
        if let Some(r) = i.remote.as_mut() {
            r.fec = fec(remote);
        }
        rule::FecMismatch.run(&Ctx::new(&i))
    }

    #[test]
    fn different_modes_are_named_with_each_end() {
        let f = run(Some(FecMode::Rs), Some(FecMode::None), 0).expect("a finding");
        assert_eq!((f.id, f.severity), (FindingId::FecMismatch, Severity::Info));
        assert!(
            f.message.contains(
                "the local eth0 runs RS FEC at 25 Gb/s and the remote eth1 runs no FEC at 25 Gb/s"
            ) && f.message.contains("agreed per hop"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence["local `ethtool --show-fec eth0`"], "RS");
        assert_eq!(f.evidence["remote `ethtool --show-fec eth1`"], "none");
        // The fix names the end without FEC and the stronger mode.
        assert!(
            f.fix.contains("`ethtool --set-fec eth1 encoding rs`"),
            "{}",
            f.fix
        );
    }

    #[test]
    fn uncorrectable_blocks_make_it_a_warning() {
        let f = run(Some(FecMode::Baser), Some(FecMode::Rs), 17).expect("a finding");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("local: 17 uncorrectable blocks"),
            "{}",
            f.message
        );
        assert!(f.fix.contains("encoding rs"), "{}", f.fix);
    }

    #[test]
    fn nothing_when_they_agree_or_one_end_is_unknown() {
        assert!(run(Some(FecMode::Rs), Some(FecMode::Rs), 5).is_none());
        assert!(run(Some(FecMode::Rs), None, 0).is_none());
        assert!(run(None, Some(FecMode::None), 0).is_none());
    }
}
