//! The bundle on disk: a compiled bundle reads back equal, runs the same, and the same case
//! always gives byte-identical files.

mod common;

use common::{arch, conv, conv_case};
use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Conv2d;

fn sample() -> pimdiff_oracle::Case {
    let c = Conv2d {
        padding: [1, 0, 2, 1],
        bias: true,
        relu: true,
        ..conv(5, 6, [3, 2])
    };
    conv_case(c, 2, 4, 5, arch(3, 8, 4, 4, 2048), 11)
}

fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let rel = entry
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        out.push((rel, std::fs::read(&entry).unwrap()));
    }
    out.sort();
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn bundle_round_trips_through_a_directory() {
    let case = sample();
    let bundle = compile(&case, &CompileOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    bundle.write_dir(dir.path()).unwrap();
    let names: Vec<String> = files(dir.path()).into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"config.json".to_string()), "{names:?}");
    assert!(names.contains(&"io.json".to_string()));
    assert!(names.contains(&"bias.bin".to_string()));
    assert!(names.contains(&"core_2.json".to_string()));
    assert!(names
        .iter()
        .any(|n| n.starts_with("xbars") && n.ends_with("core_0.npy")));
    let back = Bundle::read_dir(dir.path()).unwrap();
    assert_eq!(back.manifest, bundle.manifest);
    assert_eq!(back.xbars, bundle.xbars);
    assert_eq!(back.program.cores, bundle.program.cores);
    let out = common::run_bundle(&case, &back).unwrap();
    assert_eq!(out, pimdiff_oracle::reference(&case).unwrap());
}

#[test]
fn compilation_is_deterministic_to_the_byte() {
    let case = sample();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    compile(&case, &CompileOptions::default())
        .unwrap()
        .write_dir(a.path())
        .unwrap();
    compile(&case, &CompileOptions::default())
        .unwrap()
        .write_dir(b.path())
        .unwrap();
    assert_eq!(files(a.path()), files(b.path()));
}

#[test]
fn programs_follow_the_pimsim_nn_rules() {
    use pimdiff_isa::inst::Opcode;
    for seed in 0..40 {
        let c = Conv2d {
            padding: [1; 4],
            stride: [2, 1],
            ..conv(3 + seed as usize % 5, 5, [3, 3])
        };
        let case = conv_case(c, 1, 5, 4, arch(4, 3, 2, 3, 1 << 14), seed);
        let Ok(bundle) = compile(&case, &CompileOptions::default()) else {
            continue;
        };
        for (core, insts) in bundle.program.cores.iter().enumerate() {
            if let Some(last) = insts.last() {
                let op = last.opcode();
                assert!(
                    !matches!(
                        op,
                        Opcode::Sldi | Opcode::Setbw | Opcode::Nop | Opcode::Saddi
                    ),
                    "core {core} ends with {op}"
                );
            }
            for inst in insts {
                if let pimdiff_isa::Inst::Mem { rd, rs1, .. } = inst {
                    assert!(rd.index() <= 30 && rs1.index() <= 30);
                }
            }
        }
        let pimdiff_isa::GroupSpec::ArrayGroupMap(map) = &bundle.program.groups else {
            panic!("no map")
        };
        assert_eq!(map.len(), bundle.program.cores.len());
    }
}

#[test]
fn broken_bundle_directories_are_refused_naming_the_file() {
    use pimdiff_isa::bundle::BundleError;
    let case = sample();
    let bundle = compile(&case, &CompileOptions::default()).unwrap();
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        bundle.write_dir(dir.path()).unwrap();
        dir
    };

    let d = fresh();
    std::fs::remove_file(d.path().join("io.json")).unwrap();
    let err = Bundle::read_dir(d.path()).unwrap_err();
    assert!(
        matches!(&err, BundleError::Io { path, .. } if path.ends_with("io.json")),
        "{err}"
    );

    let d = fresh();
    std::fs::remove_file(d.path().join("bias.bin")).unwrap();
    let err = Bundle::read_dir(d.path()).unwrap_err();
    assert!(err.to_string().contains("bias.bin"), "{err}");

    let d = fresh();
    std::fs::write(d.path().join("config.json"), "{not json").unwrap();
    let err = Bundle::read_dir(d.path()).unwrap_err();
    assert!(matches!(err, BundleError::Program(_)), "{err}");
    assert!(err.to_string().contains("config.json"), "{err}");

    let d = fresh();
    std::fs::write(d.path().join("xbars").join("core_0.json"), "[]").unwrap();
    let err = Bundle::read_dir(d.path()).unwrap_err();
    assert!(matches!(err, BundleError::Crossbars(_)), "{err}");
    assert!(err.to_string().contains("core_0.json"), "{err}");

    let d = fresh();
    let io = std::fs::read_to_string(d.path().join("io.json")).unwrap();
    std::fs::write(
        d.path().join("io.json"),
        io.replace("\"bias.bin\"", "\"../bias.bin\""),
    )
    .unwrap();
    let err = Bundle::read_dir(d.path()).unwrap_err();
    assert!(
        matches!(&err, BundleError::Manifest { path, .. } if path.ends_with("io.json")),
        "{err}"
    );
}

#[test]
fn rewriting_a_bundle_directory_leaves_no_stale_cores() {
    let dir = tempfile::tempdir().unwrap();
    compile(&sample(), &CompileOptions::default())
        .unwrap()
        .write_dir(dir.path())
        .unwrap();
    // A smaller bundle into the same directory reads back as itself.
    let small = common::mvm_case(
        pimdiff_oracle::Mvm {
            in_features: 3,
            out_features: 2,
            bias: false,
            relu: false,
        },
        1,
        arch(1, 2, 4, 4, 256),
        9,
    );
    let bundle = compile(&small, &CompileOptions::default()).unwrap();
    bundle.write_dir(dir.path()).unwrap();
    let back = Bundle::read_dir(dir.path()).unwrap();
    assert_eq!(back.program.cores, bundle.program.cores);
    assert_eq!(back.xbars, bundle.xbars);
    assert_eq!(back.manifest, bundle.manifest);
}
