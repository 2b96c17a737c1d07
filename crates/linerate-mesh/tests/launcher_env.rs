//! Launcher precedence on environments captured under real launchers (Open MPI 4.1.4 with
//! PMIx 4.2.2, Slurm 22.05 `srun --mpi=none|pmi2|pmix`, `salloc` + `mpirun`): each file holds
//! every rank's `KEY=VALUE` lines behind the launcher's output tag (`[1,2]<stdout>:` or `2: `).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use linerate_mesh::{identify, IdentitySource, LaunchArgs};

/// The environment of each rank of one capture, keyed by the launcher's tag (in rank order).
fn ranks_of(file: &str) -> Vec<HashMap<String, String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/launcher-env")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut by_tag: BTreeMap<String, HashMap<String, String>> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (tag, kv) = if let Some(i) = line.find("<stdout>:") {
            (&line[..i], &line[i + "<stdout>:".len()..])
        } else {
            line.split_once(": ")
                .unwrap_or_else(|| panic!("{file}:{}: no launcher tag", n + 1))
        };
        let (k, v) = kv
            .split_once('=')
            .unwrap_or_else(|| panic!("{file}:{}: not KEY=VALUE", n + 1));
        // `[1,10]` must sort after `[1,9]`: order tags by their last number.
        let key: String = tag.chars().filter(char::is_ascii_digit).collect();
        let last: u32 = tag
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{file}:{}: tag {tag:?} has no number ({key})", n + 1));
        by_tag
            .entry(format!("{last:08}"))
            .or_default()
            .insert(k.to_string(), v.to_string());
    }
    assert!(!by_tag.is_empty(), "{file}: no environment");
    by_tag.into_values().collect()
}

/// (rank, size, rank source, size source, notes) of every rank of a capture.
fn identities(file: &str) -> Vec<(u32, u32, IdentitySource, IdentitySource, usize)> {
    ranks_of(file)
        .iter()
        .map(|env| {
            let host = env.get("HOST").cloned().unwrap_or_default();
            let id = identify(&LaunchArgs::default(), &|k| env.get(k).cloned(), &host)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            (id.rank, id.size, id.source, id.size_source, id.notes.len())
        })
        .collect()
}

#[test]
fn mpirun_gives_open_mpi_ranks() {
    use IdentitySource::OpenMpi;
    assert_eq!(
        identities("mpirun_local_np2.txt"),
        [(0, 2, OpenMpi, OpenMpi, 0), (1, 2, OpenMpi, OpenMpi, 0)]
    );
}

#[test]
fn srun_without_mpi_gives_slurm_ranks() {
    use IdentitySource::Slurm;
    assert_eq!(
        identities("srun_N2_n2_mpi_none.txt"),
        [(0, 2, Slurm, Slurm, 0), (1, 2, Slurm, Slurm, 0)]
    );
}

#[test]
fn srun_pmi2_gives_pmi_ranks_that_agree_with_slurm() {
    use IdentitySource::Pmi;
    assert_eq!(
        identities("srun_N2_n2_mpi_pmi2.txt"),
        [(0, 2, Pmi, Pmi, 0), (1, 2, Pmi, Pmi, 0)]
    );
}

#[test]
fn srun_pmix_takes_the_rank_from_pmix_and_the_size_from_slurm() {
    use IdentitySource::{Pmix, Slurm};
    assert_eq!(
        identities("srun_N2_n2_mpi_pmix.txt"),
        [(0, 2, Pmix, Slurm, 0), (1, 2, Pmix, Slurm, 0)]
    );
}

#[test]
fn mpirun_inside_salloc_ignores_the_stale_slurm_values_with_a_note() {
    use IdentitySource::OpenMpi;
    // SLURM_NTASKS=2 against OMPI_COMM_WORLD_SIZE=4 in every rank (one note); SLURM_PROCID
    // 0,0,1,1 against ranks 0..3 (a second note where they differ).
    assert_eq!(
        identities("salloc_mpirun_np4.txt"),
        [
            (0, 4, OpenMpi, OpenMpi, 1),
            (1, 4, OpenMpi, OpenMpi, 2),
            (2, 4, OpenMpi, OpenMpi, 2),
            (3, 4, OpenMpi, OpenMpi, 2)
        ]
    );
    let env = &ranks_of("salloc_mpirun_np4.txt")[1];
    let id = identify(&LaunchArgs::default(), &|k| env.get(k).cloned(), "n0").unwrap();
    let notes = id.notes.join("\n");
    assert!(
        notes.contains("SLURM_NTASKS=2")
            && notes.contains("OMPI_COMM_WORLD_SIZE=4")
            && notes.contains("mpirun inside a Slurm allocation"),
        "{notes}"
    );
}

#[test]
fn the_same_stale_slurm_values_without_mpi_are_an_error() {
    // Remove the MPI variables from the salloc capture: Slurm alone gives a duplicated rank,
    // which only a contradicting --size can reveal, and that must be an error, not a note.
    let mut env = ranks_of("salloc_mpirun_np4.txt")[3].clone();
    env.retain(|k, _| !k.starts_with("OMPI_") && !k.starts_with("PMIX_"));
    let args = LaunchArgs {
        size: Some(4),
        ..LaunchArgs::default()
    };
    let e = identify(&args, &|k| env.get(k).cloned(), "n1").unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("--size=4") && m.contains("SLURM_NTASKS=2"),
        "{m}"
    );
}

#[test]
fn slurm_step_nodelist_names_the_coordinator_candidate() {
    for file in ["srun_N2_n2_mpi_none.txt", "salloc_mpirun_np4.txt"] {
        for env in ranks_of(file) {
            let c = linerate_mesh::coordinator_candidates(&|k| env.get(k).cloned(), &[]).unwrap();
            assert_eq!(c.len(), 1, "{file}");
            assert_eq!(c[0].host, "n0", "{file}");
        }
    }
}
