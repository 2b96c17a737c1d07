//! Who am I: this process's rank and the job's size, from the flags or from what the launcher
//! put in the environment, and where rank 0's coordinator may be found when nothing more
//! precise says so. Pure: the environment comes in as a lookup closure, the host name as a
//! string.
//!
//! Precedence (the first source that gives a rank decides the rank, the first that gives a
//! size decides the size): `--rank/--size`; Open MPI (`OMPI_COMM_WORLD_RANK/SIZE`); PMI
//! (`PMI_RANK/PMI_SIZE`); PMIx (`PMIX_RANK`; PMIx puts no size in the environment); Slurm
//! (`SLURM_PROCID/SLURM_NTASKS`); a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, size from
//! `--size`); this host's position in `--hosts` (`--self` names the host when the host name
//! does not). Every other source that is present must agree, or the run stops with an error
//! naming both, with one exception: `mpirun` inside a Slurm allocation leaves the allocation's
//! `SLURM_*` values in every rank (`SLURM_NTASKS=2` against `OMPI_COMM_WORLD_SIZE=4`, the same
//! `SLURM_PROCID` twice), so when Open MPI, PMI or PMIx decided, a disagreeing Slurm value is
//! ignored and the identity carries a note saying so.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::hostlist::{self, HostlistError};
use crate::types::{IdentitySource, RankId};

/// The largest job accepted: a size above it is a typo or a garbage variable, and every
/// per-rank table the coordinator holds is sized from it.
pub const MAX_RANKS: u32 = 100_000;

/// What the flags say (the host list already expanded with [`hostlist::expand`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchArgs {
    pub rank: Option<u32>,
    pub size: Option<u32>,
    /// `--hosts`, expanded: rank i is the i-th name.
    pub hosts: Vec<String>,
    /// `--self`: this host's name in `--hosts`, when the host name is not it.
    pub self_name: Option<String>,
}

/// This process in the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub rank: RankId,
    pub size: u32,
    /// The source that decided the rank (the one the output names).
    pub source: IdentitySource,
    /// The source that decided the size (differs for PMIx and Indexed Jobs).
    pub size_source: IdentitySource,
    /// What the reader should know: sources that were overruled, and why.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LaunchError {
    #[error("{what} is {value:?}: expected {expected}")]
    BadValue {
        what: String,
        value: String,
        expected: String,
    },
    #[error("the launch sources disagree: {first} but {second}; run under one launcher, or drop the flag that contradicts it")]
    Disagree { first: String, second: String },
    #[error("no rank: none of --rank, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX is set{hosts}; run under mpirun/srun/a Kubernetes Indexed Job, or pass --rank and --size, or --hosts with this host in it")]
    NoRank { hosts: String },
    #[error("{rank_from} gives this rank but nothing gives the job size: pass --size N{hint}")]
    NoSize { rank_from: String, hint: String },
    #[error("{from}: the job size must be at least 1")]
    SizeZero { from: String },
    #[error("{from}: a mesh needs at least two ranks (one rank has no link to measure); launch two or more (mpirun -np 2, srun -n 2, --size 2, two hosts in --hosts)")]
    TooFewRanks { from: String },
    #[error("{from}: a job of {size} ranks is more than the {max} linerate accepts")]
    SizeTooLarge { from: String, size: u64, max: u32 },
    #[error("{rank_from} but {size_from}: the rank must be below the size")]
    RankOutOfRange {
        rank_from: String,
        size_from: String,
    },
    #[error("this host ({name:?}, {how}) is not in --hosts ({list}); pass --self NAME with its name in the list")]
    NotInHosts {
        name: String,
        how: &'static str,
        list: String,
    },
    #[error(
        "this host ({name:?}) appears {count} times in --hosts: its rank is ambiguous; pass --rank"
    )]
    AmbiguousHost { name: String, count: usize },
    #[error(transparent)]
    Hostlist(#[from] HostlistError),
}

/// One value a source claims, with how it reads in a message (`OMPI_COMM_WORLD_SIZE=4`).
#[derive(Debug, Clone)]
struct Claim {
    source: IdentitySource,
    value: u64,
    shown: String,
}

/// Reads `var` as a whole number: absent is `None`, anything but digits is an error naming the
/// variable, its value and what was expected.
fn env_number(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<Option<u64>, LaunchError> {
    let Some(raw) = env(var) else {
        return Ok(None);
    };
    let t = raw.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) || t.len() > 18 {
        return Err(LaunchError::BadValue {
            what: format!("environment variable {var}"),
            value: raw,
            expected: "a whole number (0, 1, 2 ...)".to_string(),
        });
    }
    Ok(Some(t.parse().expect("at most 18 ASCII digits")))
}

fn claim(source: IdentitySource, name: &str, value: u64) -> Claim {
    Claim {
        source,
        value,
        shown: format!("{name}={value}"),
    }
}

/// The rank and size claims of every environment source, in precedence order.
fn env_claims(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<Claim>, Vec<Claim>), LaunchError> {
    const VARS: [(IdentitySource, &str, Option<&str>); 5] = [
        (
            IdentitySource::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            Some("OMPI_COMM_WORLD_SIZE"),
        ),
        (IdentitySource::Pmi, "PMI_RANK", Some("PMI_SIZE")),
        (IdentitySource::Pmix, "PMIX_RANK", None),
        (IdentitySource::Slurm, "SLURM_PROCID", Some("SLURM_NTASKS")),
        (IdentitySource::IndexedJob, "JOB_COMPLETION_INDEX", None),
    ];
    let mut ranks = Vec::new();
    let mut sizes = Vec::new();
    for (source, rank_var, size_var) in VARS {
        if let Some(r) = env_number(env, rank_var)? {
            ranks.push(claim(source, rank_var, r));
        }
        if let Some(size_var) = size_var {
            if let Some(s) = env_number(env, size_var)? {
                sizes.push(claim(source, size_var, s));
            }
        }
    }
    Ok((ranks, sizes))
}

/// This host's claims from `--hosts`: its size, and its position when its name is there once.
/// The position is itself a result: a name listed twice is an error only when the host list
/// is what decides the rank.
fn host_claims(
    args: &LaunchArgs,
    hostname: &str,
) -> (Result<Option<Claim>, LaunchError>, Option<Claim>) {
    if args.hosts.is_empty() {
        return (Ok(None), None);
    }
    let size = claim(
        IdentitySource::HostList,
        "--hosts count",
        args.hosts.len() as u64,
    );
    let name = args.self_name.as_deref().unwrap_or(hostname);
    let mut at: Vec<usize> = positions(&args.hosts, |h| h == name);
    if at.is_empty() && args.self_name.is_none() {
        // `node01.cluster` against a list of short names, or the reverse.
        let short = |s: &str| s.split('.').next().unwrap_or(s).to_string();
        at = positions(&args.hosts, |h| short(h) == short(name));
    }
    let rank = match at.as_slice() {
        [one] => Ok(Some(Claim {
            source: IdentitySource::HostList,
            value: *one as u64,
            shown: format!("{name:?} is name {one} (from 0) of --hosts"),
        })),
        [] => Ok(None),
        many => Err(LaunchError::AmbiguousHost {
            name: name.to_string(),
            count: many.len(),
        }),
    };
    (rank, Some(size))
}

fn positions(hosts: &[String], f: impl Fn(&str) -> bool) -> Vec<usize> {
    hosts
        .iter()
        .enumerate()
        .filter(|(_, h)| f(h))
        .map(|(i, _)| i)
        .collect()
}

/// Decides this process's rank and the job's size; see the module documentation for the
/// precedence and the one tolerated disagreement.
pub fn identify(
    args: &LaunchArgs,
    env: &dyn Fn(&str) -> Option<String>,
    hostname: &str,
) -> Result<Identity, LaunchError> {
    let (mut ranks, mut sizes) = env_claims(env)?;
    if let Some(r) = args.rank {
        ranks.insert(0, claim(IdentitySource::Flags, "--rank", u64::from(r)));
    }
    if let Some(s) = args.size {
        sizes.insert(0, claim(IdentitySource::Flags, "--size", u64::from(s)));
    }
    let (host_rank, host_size) = host_claims(args, hostname);
    sizes.extend(host_size);
    if ranks.is_empty() {
        // The host list decides only when nothing else gives a rank; then this host must be in it.
        match host_rank? {
            Some(c) => ranks.push(c),
            None if !args.hosts.is_empty() => return Err(not_in_hosts(args, hostname)),
            None => {
                return Err(LaunchError::NoRank {
                    hosts: String::new(),
                })
            }
        }
    } else {
        ranks.extend(host_rank.unwrap_or(None));
    }
    let rank = ranks[0].clone();
    let Some(size) = sizes.first().cloned() else {
        return Err(no_size(&rank));
    };
    let mut notes = Vec::new();
    check_agreement(&rank, &ranks[1..], "rank", &mut notes)?;
    check_agreement(&size, &sizes[1..], "size", &mut notes)?;
    if size.value == 0 {
        return Err(LaunchError::SizeZero { from: size.shown });
    }
    if size.value == 1 {
        return Err(LaunchError::TooFewRanks { from: size.shown });
    }
    if size.value > u64::from(MAX_RANKS) {
        return Err(LaunchError::SizeTooLarge {
            from: size.shown,
            size: size.value,
            max: MAX_RANKS,
        });
    }
    if rank.value >= size.value {
        return Err(LaunchError::RankOutOfRange {
            rank_from: rank.shown,
            size_from: size.shown,
        });
    }
    Ok(Identity {
        rank: rank.value as RankId,
        size: size.value as u32,
        source: rank.source,
        size_source: size.source,
        notes,
    })
}

fn not_in_hosts(args: &LaunchArgs, hostname: &str) -> LaunchError {
    let (name, how) = match &args.self_name {
        Some(s) => (s.clone(), "from --self"),
        None => (hostname.to_string(), "the host name"),
    };
    let shown: Vec<&str> = args.hosts.iter().take(4).map(String::as_str).collect();
    let more = args.hosts.len().saturating_sub(shown.len());
    let list = if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    };
    LaunchError::NotInHosts { name, how, list }
}

fn no_size(rank: &Claim) -> LaunchError {
    let hint = match rank.source {
        IdentitySource::IndexedJob => " (the Job's `completions`)",
        IdentitySource::Pmix => " (PMIx puts no job size in the environment)",
        _ => "",
    };
    LaunchError::NoSize {
        rank_from: rank.shown.clone(),
        hint: hint.to_string(),
    }
}

/// Every later claim must match the deciding one; a Slurm value overruled by an MPI launcher
/// (mpirun inside an allocation) becomes a note instead.
fn check_agreement(
    decided: &Claim,
    others: &[Claim],
    what: &str,
    notes: &mut Vec<String>,
) -> Result<(), LaunchError> {
    for other in others.iter().filter(|o| o.value != decided.value) {
        if decided.source.is_mpi() && other.source == IdentitySource::Slurm {
            notes.push(format!(
                "{what} from {} ignores {}: mpirun inside a Slurm allocation leaves the allocation's SLURM_* values in every rank",
                decided.shown, other.shown
            ));
        } else {
            return Err(LaunchError::Disagree {
                first: decided.shown.clone(),
                second: other.shown.clone(),
            });
        }
    }
    Ok(())
}

/// Where a coordinator host name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateSource {
    /// The first host of `SLURM_STEP_NODELIST` (where Slurm and mpirun place rank 0 by default).
    SlurmStepNodelist,
    /// `$JOB_NAME-0.$SUBDOMAIN`: pod 0 of an Indexed Job behind its headless Service.
    IndexedJob,
    /// The first name of `--hosts`.
    HostList,
}

/// A host that may run rank 0's coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoordinatorCandidate {
    pub host: String,
    pub source: CandidateSource,
}

/// The coordinator's host candidates, in the order the runtime tries them when neither
/// `--coordinator`, PMIx nor a rendezvous directory settled it: the first host of
/// `SLURM_STEP_NODELIST` (expanded), `$JOB_NAME-0.$SUBDOMAIN` (both variables set), the
/// first of `--hosts` (`hosts`, expanded). A malformed variable is an error naming it.
pub fn coordinator_candidates(
    env: &dyn Fn(&str) -> Option<String>,
    hosts: &[String],
) -> Result<Vec<CoordinatorCandidate>, LaunchError> {
    let mut out = Vec::new();
    if let Some(list) = env("SLURM_STEP_NODELIST") {
        let names = hostlist::expand(&list).map_err(|e| LaunchError::BadValue {
            what: "environment variable SLURM_STEP_NODELIST".to_string(),
            value: list.clone(),
            expected: format!("a Slurm host list such as `n[0-3]` ({e})"),
        })?;
        out.push(CoordinatorCandidate {
            host: names[0].clone(),
            source: CandidateSource::SlurmStepNodelist,
        });
    }
    if let (Some(job), Some(sub)) = (env("JOB_NAME"), env("SUBDOMAIN")) {
        for (var, v) in [("JOB_NAME", &job), ("SUBDOMAIN", &sub)] {
            if !is_dns_name(v) {
                return Err(LaunchError::BadValue {
                    what: format!("environment variable {var}"),
                    value: v.clone(),
                    expected: "a DNS name (letters, digits, `-` and `.`)".to_string(),
                });
            }
        }
        out.push(CoordinatorCandidate {
            host: format!("{job}-0.{sub}"),
            source: CandidateSource::IndexedJob,
        });
    }
    if let Some(first) = hosts.first() {
        out.push(CoordinatorCandidate {
            host: first.clone(),
            source: CandidateSource::HostList,
        });
    }
    Ok(out)
}

fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !s.starts_with(['-', '.'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    fn run(args: &LaunchArgs, pairs: &[(&str, &str)], host: &str) -> Result<Identity, LaunchError> {
        let env = env_of(pairs);
        identify(args, &|k| env.get(k).cloned(), host)
    }

    #[test]
    fn flags_alone() {
        let a = LaunchArgs {
            rank: Some(3),
            size: Some(8),
            ..LaunchArgs::default()
        };
        let id = run(&a, &[], "h").unwrap();
        assert_eq!((id.rank, id.size, id.source), (3, 8, IdentitySource::Flags));
        assert!(id.notes.is_empty());
    }

    #[test]
    fn flags_that_contradict_the_launcher_are_an_error_naming_both() {
        let a = LaunchArgs {
            rank: Some(1),
            ..LaunchArgs::default()
        };
        let e = run(
            &a,
            &[("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "4")],
            "h",
        )
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("--rank=1") && m.contains("OMPI_COMM_WORLD_RANK=2"),
            "{m}"
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = run(
            &LaunchArgs::default(),
            &[("SLURM_PROCID", "x1"), ("SLURM_NTASKS", "2")],
            "h",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("SLURM_PROCID") && e.to_string().contains("x1"),
            "{e}"
        );
        let e = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", ""), ("PMI_SIZE", "2")],
            "h",
        )
        .unwrap_err();
        assert!(e.to_string().contains("PMI_RANK"), "{e}");
        let e = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", "-1"), ("PMI_SIZE", "2")],
            "h",
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::BadValue { .. }), "{e}");
    }

    #[test]
    fn sizes_and_ranks_are_validated() {
        let e = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", "0"), ("PMI_SIZE", "0")],
            "h",
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::SizeZero { .. }), "{e}");
        // One rank measures nothing: refused, naming where the size came from.
        for (vars, named) in [
            (
                vec![("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")],
                "SLURM_NTASKS=1",
            ),
            (
                vec![("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "1")],
                "OMPI_COMM_WORLD_SIZE=1",
            ),
        ] {
            let e = run(&LaunchArgs::default(), &vars, "h").unwrap_err();
            assert!(matches!(e, LaunchError::TooFewRanks { .. }), "{e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("{named}: a mesh needs at least two ranks")),
                "{e}"
            );
        }
        let e = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", "2"), ("PMI_SIZE", "2")],
            "h",
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::RankOutOfRange { .. }), "{e}");
        assert!(e.to_string().contains("PMI_RANK=2") && e.to_string().contains("PMI_SIZE=2"));
        let e = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", "2"), ("PMI_SIZE", "100001")],
            "h",
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::SizeTooLarge { .. }), "{e}");
        let id = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", "99999"), ("PMI_SIZE", "100000")],
            "h",
        )
        .unwrap();
        assert_eq!(id.size, MAX_RANKS);
        let e = run(
            &LaunchArgs::default(),
            &[("PMI_RANK", "2"), ("PMI_SIZE", "99999999999999999999")],
            "h",
        )
        .unwrap_err();
        assert!(matches!(e, LaunchError::BadValue { .. }), "{e}");
    }

    #[test]
    fn nothing_at_all_says_how_to_launch() {
        let e = run(&LaunchArgs::default(), &[], "h").unwrap_err();
        assert!(matches!(e, LaunchError::NoRank { .. }));
        assert!(e.to_string().contains("--rank"), "{e}");
    }

    #[test]
    fn indexed_job_needs_the_size_flag() {
        let env = [("JOB_COMPLETION_INDEX", "5")];
        let e = run(&LaunchArgs::default(), &env, "job-5").unwrap_err();
        assert!(
            e.to_string().contains("JOB_COMPLETION_INDEX=5")
                && e.to_string().contains("completions"),
            "{e}"
        );
        let a = LaunchArgs {
            size: Some(8),
            ..LaunchArgs::default()
        };
        let id = run(&a, &env, "job-5").unwrap();
        assert_eq!((id.rank, id.size), (5, 8));
        assert_eq!(
            (id.source, id.size_source),
            (IdentitySource::IndexedJob, IdentitySource::Flags)
        );
        let e = run(&a, &[("JOB_COMPLETION_INDEX", "8")], "job-8").unwrap_err();
        assert!(matches!(e, LaunchError::RankOutOfRange { .. }), "{e}");
    }

    #[test]
    fn pmix_rank_alone_needs_a_size() {
        let e = run(&LaunchArgs::default(), &[("PMIX_RANK", "1")], "h").unwrap_err();
        assert!(e.to_string().contains("PMIX_RANK=1"), "{e}");
        let a = LaunchArgs {
            size: Some(2),
            ..LaunchArgs::default()
        };
        let id = run(&a, &[("PMIX_RANK", "1")], "h").unwrap();
        assert_eq!((id.rank, id.source), (1, IdentitySource::Pmix));
    }

    fn hosts(list: &str) -> LaunchArgs {
        LaunchArgs {
            hosts: hostlist::expand(list).unwrap(),
            ..LaunchArgs::default()
        }
    }

    #[test]
    fn pdsh_position_in_the_host_list() {
        let a = hosts("node[01-16]");
        let id = run(&a, &[], "node07").unwrap();
        assert_eq!(
            (id.rank, id.size, id.source),
            (6, 16, IdentitySource::HostList)
        );
        // A fully qualified host name matches its short name in the list.
        assert_eq!(run(&a, &[], "node07.cluster.example").unwrap().rank, 6);
        // --self names the host when the host name does not (namespaces, pdsh %h).
        let mut b = hosts("fab[0-7]");
        b.self_name = Some("fab3".to_string());
        assert_eq!(run(&b, &[], "vm").unwrap().rank, 3);
        let e = run(&hosts("fab[0-7]"), &[], "vm").unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("\"vm\"") && m.contains("fab0, fab1, fab2, fab3 and 4 more"),
            "{m}"
        );
        let e = run(&hosts("a,b,a"), &[], "a").unwrap_err();
        assert!(
            matches!(e, LaunchError::AmbiguousHost { count: 2, .. }),
            "{e}"
        );
    }

    #[test]
    fn host_list_size_must_match_the_launcher() {
        let a = hosts("n[0-3]");
        let e = run(&a, &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")], "n1").unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("SLURM_NTASKS=2") && m.contains("--hosts count=4"),
            "{m}"
        );
        // Position disagreeing with the launcher's rank.
        let a = hosts("n[0-1]");
        let e = run(&a, &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")], "n0").unwrap_err();
        assert!(e.to_string().contains("SLURM_PROCID=1"), "{e}");
        // Agreeing: fine.
        let id = run(&a, &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")], "n1").unwrap();
        assert_eq!((id.rank, id.source), (1, IdentitySource::Slurm));
    }

    #[test]
    fn slurm_disagreeing_with_a_non_mpi_source_is_an_error() {
        let a = LaunchArgs {
            size: Some(4),
            ..LaunchArgs::default()
        };
        let e = run(&a, &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")], "h").unwrap_err();
        assert!(
            e.to_string().contains("--size=4") && e.to_string().contains("SLURM_NTASKS=2"),
            "{e}"
        );
        let e = run(
            &LaunchArgs::default(),
            &[
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("PMI_RANK", "2"),
                ("PMI_SIZE", "4"),
            ],
            "h",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("OMPI_COMM_WORLD_RANK=1")
                && e.to_string().contains("PMI_RANK=2"),
            "{e}"
        );
    }

    #[test]
    fn candidates_in_order() {
        let env = env_of(&[
            ("SLURM_STEP_NODELIST", "rack[1-2]-n[01-16]"),
            ("JOB_NAME", "mesh"),
            ("SUBDOMAIN", "meshsvc"),
        ]);
        let h = vec!["x".to_string(), "y".to_string()];
        let c = coordinator_candidates(&|k| env.get(k).cloned(), &h).unwrap();
        let got: Vec<(&str, CandidateSource)> =
            c.iter().map(|c| (c.host.as_str(), c.source)).collect();
        assert_eq!(
            got,
            [
                ("rack1-n01", CandidateSource::SlurmStepNodelist),
                ("mesh-0.meshsvc", CandidateSource::IndexedJob),
                ("x", CandidateSource::HostList)
            ]
        );
        assert!(coordinator_candidates(&|_| None, &[]).unwrap().is_empty());
        let env = env_of(&[("JOB_NAME", "mesh"), ("SUBDOMAIN", "a b")]);
        let e = coordinator_candidates(&|k| env.get(k).cloned(), &[]).unwrap_err();
        assert!(e.to_string().contains("SUBDOMAIN"), "{e}");
        let env = env_of(&[("SLURM_STEP_NODELIST", "n[1-")]);
        let e = coordinator_candidates(&|k| env.get(k).cloned(), &[]).unwrap_err();
        assert!(
            e.to_string().contains("SLURM_STEP_NODELIST") && e.to_string().contains("position"),
            "{e}"
        );
    }
}
