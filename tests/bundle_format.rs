//! The bundle format as published (`docs/reference/bundle-format.md` and its schemas) against
//! the code: the schemas are the ones generated from the readers' types, the annotated example
//! is exactly what `pimdiff compile` writes, and `pimdiff check-bundle` names the field of each
//! kind of broken bundle.
//!
//! `UPDATE_DOCS=1 cargo test -p pimdiff --test bundle_format` rewrites the schema files.

#[path = "support/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};

use cli::{path, pimdiff, stderr, stdout};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every published schema: the bundle's files and `case.json`.
fn schemas() -> Vec<(&'static str, schemars::Schema)> {
    let mut all = pimdiff_isa::schema::bundle_schemas();
    all.push(("case.schema.json", pimdiff_oracle::case_schema()));
    all
}

#[test]
fn the_published_schemas_are_the_ones_the_readers_generate() {
    for (name, schema) in schemas() {
        let rel = format!("docs/reference/schemas/{name}");
        let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let file = root().join(&rel);
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &generated).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        if committed != generated {
            let diff = similar::TextDiff::from_lines(committed.as_str(), generated.as_str());
            panic!(
                "{rel} differs from the schema its reader generates (committed → generated):\n{}\n\
                 regenerate it with `UPDATE_DOCS=1 cargo test -p pimdiff --test bundle_format`",
                diff.unified_diff().context_radius(2)
            );
        }
    }
}

#[test]
fn the_schemas_say_what_the_readers_require() {
    let io = serde_json::to_value(schemars::schema_for!(pimdiff_isa::IoManifest)).unwrap();
    assert_eq!(io["required"], serde_json::json!(["input", "output"]));
    assert_eq!(io["additionalProperties"], false);
    let layout = &io["$defs"]["Layout"];
    let words: Vec<&str> = layout["oneOf"]
        .as_array()
        .map(|v| v.iter().filter_map(|w| w["const"].as_str()).collect())
        .or_else(|| {
            layout["enum"]
                .as_array()
                .map(|v| v.iter().filter_map(|w| w.as_str()).collect())
        })
        .unwrap();
    assert_eq!(words, ["nchw", "nhwc", "nc"]);
    let config =
        serde_json::to_value(schemars::schema_for!(pimdiff_isa::schema::BundleConfig)).unwrap();
    assert_eq!(config["required"], serde_json::json!(["core_cnt"]));
    let case = serde_json::to_value(pimdiff_oracle::case_schema()).unwrap();
    assert_eq!(
        case["required"],
        serde_json::json!(["format", "op", "input_shape", "arch"])
    );
    assert_eq!(case["properties"]["format"]["const"], 1);
}

/// The fenced block after each `<!-- KIND: NAME -->` marker of the page: `(kind, name, text)`.
fn annotated_files(page: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(marker) = line
            .strip_prefix("<!-- ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        let Some((kind, name)) = marker.split_once(": ") else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "{name}: no block after its marker"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push((kind.to_string(), name.to_string(), body.join("\n") + "\n"));
    }
    out
}

/// The example case of the page, compiled by `pimdiff compile` into `dir/exb`.
fn compile_example(dir: &Path) -> (PathBuf, PathBuf) {
    let (case, bundle) = (dir.join("ex"), dir.join("exb"));
    let args = [
        "new-case",
        "--op",
        "conv2d",
        "--in-channels",
        "2",
        "--out-channels",
        "2",
        "--kernel",
        "1",
        "--padding",
        "0",
        "--height",
        "1",
        "--width",
        "2",
        "--bias",
        "--seed",
        "7",
        "--cores",
        "2",
        "--arrays-per-core",
        "1",
        "--array-rows",
        "2",
        "--array-cols",
        "1",
        "--local-memory-bytes",
        "256",
        path(&case),
    ];
    assert!(pimdiff(&args).status.success());
    let out = pimdiff(&["compile", path(&case), "-o", path(&bundle)]);
    assert!(out.status.success(), "{}", stderr(&out));
    (case, bundle)
}

#[test]
fn the_annotated_example_is_what_pimdiff_compile_writes() {
    let page = std::fs::read_to_string(root().join("docs/reference/bundle-format.md")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (case, bundle) = compile_example(tmp.path());
    let files = annotated_files(&page);
    let names: Vec<&str> = files.iter().map(|(_, n, _)| n.as_str()).collect();
    // Every file of the bundle is on the page.
    let mut written: Vec<String> = walk(&bundle);
    written.sort();
    let mut shown: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    shown.sort();
    assert_eq!(shown, written);
    for (kind, name, text) in &files {
        let file = bundle.join(name);
        let actual = match kind.as_str() {
            "file" => std::fs::read_to_string(&file).unwrap(),
            "hex" => {
                let bytes = std::fs::read(&file).unwrap();
                let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                hex.join(" ") + "\n"
            }
            "npy" => {
                use ndarray_npy::ReadNpyExt;
                let cells =
                    ndarray::ArrayD::<i8>::read_npy(std::fs::File::open(&file).unwrap()).unwrap();
                let values: Vec<String> = cells
                    .outer_iter()
                    .map(|a| {
                        let rows: Vec<String> = a
                            .outer_iter()
                            .map(|r| format!("{:?}", r.iter().collect::<Vec<_>>()))
                            .collect();
                        format!("[{}]", rows.join(", "))
                    })
                    .collect();
                format!("int8 {:?}: [{}]\n", cells.shape(), values.join(", "))
            }
            other => panic!("unknown marker kind {other}"),
        };
        assert_eq!(
            text.trim_end(),
            actual.trim_end(),
            "{name} on the page differs from what pimdiff compile wrote"
        );
    }
    let out = pimdiff(&["check-bundle", path(&bundle), "--case", path(&case)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("is a valid bundle: 2 core(s), 36 instruction(s)"));
}

/// The files under `dir`, relative to it.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let sub = p.file_name().unwrap().to_string_lossy().into_owned();
            out.extend(walk(&p).into_iter().map(|f| format!("{sub}/{f}")));
        } else {
            out.push(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    out
}

/// A JSON file of `dir` edited by `f`.
fn edit_json(dir: &Path, file: &str, f: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join(file);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

#[test]
fn check_bundle_names_the_field_of_each_broken_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let (case, good) = compile_example(tmp.path());
    type Break = fn(&Path);
    let broken: [(&str, Break, &str); 6] = [
        (
            "missing key",
            |d| edit_json(d, "io.json", |v| drop(v.as_object_mut().unwrap().remove("output"))),
            "io.json: missing field `output`",
        ),
        (
            "wrong type",
            |d| edit_json(d, "io.json", |v| v["input"]["addr"] = "0".into()),
            "io.json: field `input.addr`: invalid type: string \"0\", expected u32",
        ),
        (
            "wrong layout word",
            |d| edit_json(d, "io.json", |v| v["input"]["layout"] = "NHWC".into()),
            "io.json: field `input.layout`: unknown variant `NHWC`, expected one of `nchw`, `nhwc`, `nc`",
        ),
        (
            "missing xbars",
            |d| std::fs::remove_dir_all(d.join("xbars")).unwrap(),
            "xbars/: missing: the program multiplies on crossbars (`mvmul` at core 0, pc 7) but \
             the bundle has no crossbar contents; write xbars/core_<i>.npy (the cells) and \
             xbars/core_<i>.json (the groups) for every core with arrays",
        ),
        (
            "constants of the wrong size",
            |d| std::fs::write(d.join("bias.bin"), [0u8; 12]).unwrap(),
            "io.json: field `constants[0]`: constant `bias` (file `bias.bin`) has 12 bytes, but \
             the case's bias is 2 int32 values, 8 bytes (raw little-endian)",
        ),
        (
            "another architecture",
            |d| edit_json(d, "config.json", |v| v["arch"]["local_memory_bytes"] = 1024.into()),
            "config.json: field `arch.local_memory_bytes`: 1024, but the case's \
             `arch.local_memory_bytes` is 256; the case governs",
        ),
    ];
    for (i, (what, damage, expected)) in broken.iter().enumerate() {
        let dir = tmp.path().join(format!("broken-{i}"));
        copy_dir(&good, &dir);
        damage(&dir);
        let out = pimdiff(&["check-bundle", path(&dir), "--case", path(&case)]);
        assert_eq!(out.status.code(), Some(2), "{what}");
        assert_eq!(
            stderr(&out).trim_end(),
            format!("error: {}: not a valid bundle: {expected}", path(&dir)),
            "{what}"
        );
    }
    // Without --case only the format is checked: the wrong architecture alone passes.
    let dir = tmp.path().join("broken-5");
    let out = pimdiff(&["check-bundle", path(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
