//! Coverage-guided hunts (`pimdiff hunt --guided`): the same corpus and summary for a seed
//! with one job, a corpus seeding the next hunt, malformed corpora refused with the culprit
//! named, and mutations that always give valid networks and cases.

#[path = "support/cli.rs"]
mod cli;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pimdiff::targets::pimcomp_nn::mutate::{mutate_network, within_bounds};
use pimdiff::targets::pimcomp_nn::network::{check_model_json, network_from_seed, NetConfig};
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff::targets::tensor::mutate::mutate_case;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use cli::pimdiff;

/// A guided tensor hunt of `cases` cases with one job into `out`; its exit code.
fn guided_hunt(out: &Path, cases: u64, extra: &[&str]) -> i32 {
    let cases = cases.to_string();
    let mut args = vec![
        "hunt",
        "--guided",
        "--cases",
        &cases,
        "--seed",
        "11",
        "--jobs",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = pimdiff(&args);
    o.status.code().unwrap_or(-1)
}

/// Every file under `dir`, by relative path, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `summary.json` without the fields that measure time.
fn summary(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for k in ["cases_per_second", "sweep_time_s", "wall_time_s"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

#[test]
fn one_job_gives_the_same_corpus_and_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    assert_eq!(guided_hunt(&a, 600, &[]), 0);
    assert_eq!(guided_hunt(&b, 600, &[]), 0);
    let corpus = tree(&a.join("corpus"));
    assert!(corpus.len() >= 20, "{} files", corpus.len());
    assert_eq!(corpus, tree(&b.join("corpus")));
    let s = summary(&a);
    assert_eq!(s, summary(&b));
    let g = &s["details"]["guided"];
    // One position in four is fresh (0, 4, 8, …); mutants that found no valid variant fall
    // back to fresh cases.
    assert_eq!(g["fresh_every"], 4);
    assert_eq!(
        g["fresh"].as_u64().unwrap() - g["mutation_failures"].as_u64().unwrap(),
        150
    );
    assert_eq!(
        g["fresh"].as_u64().unwrap() + g["mutants"].as_u64().unwrap(),
        600
    );
    let kept = ["kept_fresh", "kept_mutants", "kept_loaded"]
        .iter()
        .map(|k| g[k].as_u64().unwrap())
        .sum::<u64>();
    let entries = std::fs::read_dir(a.join("corpus")).unwrap().count() as u64;
    assert_eq!(kept, entries);
    assert!(g["kept_mutants"].as_u64().unwrap() > 0);
}

#[test]
fn a_corpus_seeds_the_next_hunt() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    assert_eq!(guided_hunt(&a, 300, &[]), 0);
    let corpus = a.join("corpus");
    let entries = std::fs::read_dir(&corpus).unwrap().count() as u64;
    assert_eq!(
        guided_hunt(&b, 300, &["--corpus", corpus.to_str().unwrap()]),
        0
    );
    let (sa, sb) = (summary(&a), summary(&b));
    let (ga, gb) = (&sa["details"]["guided"], &sb["details"]["guided"]);
    // Replayed in name order (the order they were kept in), every entry reaches the edges
    // it was kept for, so every one is kept again, and the next hunt starts where the first
    // one ended.
    assert_eq!(gb["loaded"].as_u64().unwrap(), entries);
    assert_eq!(gb["kept_loaded"].as_u64().unwrap(), entries);
    assert!(gb["edges"].as_u64().unwrap() >= ga["edges"].as_u64().unwrap());
}

#[test]
fn a_malformed_corpus_is_refused_naming_the_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    std::fs::create_dir_all(corpus.join("k1")).unwrap();
    std::fs::write(corpus.join("k1/case.json"), "{ not json").unwrap();
    let out = tmp.path().join("out");
    let args = [
        "hunt",
        "--guided",
        "--cases",
        "5",
        "--quiet",
        "--corpus",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let o = pimdiff(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let entry = corpus.join("k1");
    assert!(
        err.contains(&format!("corpus entry {}: ", entry.display())),
        "{err}"
    );
    // A stray file beside the entries is refused as well.
    std::fs::remove_dir_all(corpus.join("k1")).unwrap();
    std::fs::write(corpus.join("notes.txt"), "x").unwrap();
    let o = pimdiff(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "corpus entry {}: not a directory (a corpus holds one directory per entry)",
            corpus.join("notes.txt").display()
        )),
        "{err}"
    );
}

#[test]
fn a_guided_pimcomp_hunt_keeps_networks_and_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pc");
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pimcomp-fake/PIMCOMP-NN");
    let o = pimdiff(&[
        "hunt",
        "--target",
        "pimcomp-nn",
        "--mode",
        "element",
        "--pimcomp-bin",
        fake.to_str().unwrap(),
        "--guided",
        "--cases",
        "12",
        "--seed",
        "3",
        "--jobs",
        "1",
        "--quiet",
        "--minimize-time",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&out);
    let g = &s["details"]["guided"];
    assert_eq!(s["details"]["mode"], "element");
    assert!(g["feedback"].as_str().unwrap().starts_with("stand-in: "));
    let first = std::fs::read_dir(out.join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    assert!(first.join("network.json").is_file());
    assert!(first.join("entry.json").is_file());
    assert!(!s["findings"].as_array().unwrap().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// A network mutant is well formed, inside the generator's bounds, different from its
    /// parent, and its model JSON passes the independent schema and shape check.
    #[test]
    fn network_mutants_are_valid(a in any::<u64>(), b in any::<u64>(), r in any::<u64>(), splice in any::<bool>()) {
        let cfg = NetConfig::default();
        let (net, other) = (network_from_seed(&cfg, a), network_from_seed(&cfg, b));
        let mut rng = ChaCha8Rng::seed_from_u64(r);
        if let Some(m) = mutate_network(&cfg, &net, splice.then_some(&other), &mut rng) {
            prop_assert!(within_bounds(&cfg, &m));
            prop_assert_ne!(&m, &net);
            prop_assert_eq!(check_model_json(&m.to_model_json().unwrap()), Ok(()));
        }
    }

    /// A tensor case mutant is a valid case (shapes, result inside int32) that differs.
    #[test]
    fn case_mutants_are_valid(a in any::<u64>(), b in any::<u64>(), r in any::<u64>(), splice in any::<bool>()) {
        let cfg = GenConfig::default();
        let (case, other) = (case_from_seed(&cfg, a), case_from_seed(&cfg, b));
        let mut rng = ChaCha8Rng::seed_from_u64(r);
        if let Some(m) = mutate_case(&cfg, &case, splice.then_some(&other), &mut rng) {
            prop_assert!(m.check_shapes().is_ok());
            prop_assert!(pimdiff_oracle::reference(&m).is_ok());
            prop_assert_ne!(&m, &case);
        }
    }
}
