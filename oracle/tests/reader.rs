//! Every way the reader refuses a case, one test each, asserting the error kind and the
//! file/field it names; plus what it accepts that a stricter reader might not.

use std::fs;
use std::path::{Path, PathBuf};

use ndarray::{arr1, ArrayD, IxDyn};
use pimdiff_oracle::io::{read_case, replace_case, write_case};
use pimdiff_oracle::{random_tensors, Case, CaseArch, CaseError, CaseSpec, Conv2d, Op};
use serde_json::{json, Value};

fn spec() -> CaseSpec {
    CaseSpec {
        op: Op::Conv2d(Conv2d {
            in_channels: 2,
            out_channels: 4,
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1, 1, 1],
            dilation: [1, 1],
            groups: 2,
            bias: true,
            relu: false,
        }),
        input_shape: vec![1, 2, 5, 5],
        arch: CaseArch {
            cores: 2,
            arrays_per_core: 4,
            array_rows: 8,
            array_cols: 8,
            local_memory_bytes: 65536,
        },
    }
}

/// A valid case directory (conv2d 2→4, groups 2, with bias) in a fresh temporary directory.
fn valid_case() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    write_case(&random_tensors(&spec(), 7).unwrap(), &dir).unwrap();
    (tmp, dir)
}

/// A change to `case.json`.
type Edit = fn(&mut Value);

fn edit_json(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("case.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut v);
    fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
}

/// The error for the valid case after `edit` changed its `case.json`.
fn json_error(edit: impl FnOnce(&mut Value)) -> CaseError {
    let (_tmp, dir) = valid_case();
    edit_json(&dir, edit);
    read_case(&dir).unwrap_err()
}

/// A version 1.0 `.npy` file.
fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    pimdiff_input::hostile::npy_file(descr, fortran, &shape, data)
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn valid_case_round_trips() {
    let (_tmp, dir) = valid_case();
    assert_eq!(
        read_case(&dir).unwrap(),
        random_tensors(&spec(), 7).unwrap()
    );
}

#[test]
fn missing_case_json() {
    let (_tmp, dir) = valid_case();
    fs::remove_file(dir.join("case.json")).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::MissingFile {
            file: "case.json",
            ..
        })
    ));
}

#[test]
fn missing_input_and_weight() {
    for file in ["input.npy", "weight.npy"] {
        let (_tmp, dir) = valid_case();
        fs::remove_file(dir.join(file)).unwrap();
        assert!(
            matches!(read_case(&dir), Err(CaseError::MissingFile { file: f, .. }) if f == file)
        );
    }
}

#[test]
fn missing_bias_when_op_has_bias() {
    let (_tmp, dir) = valid_case();
    fs::remove_file(dir.join("bias.npy")).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::MissingFile {
            file: "bias.npy",
            ..
        })
    ));
}

#[test]
fn bias_present_when_op_has_none() {
    let (_tmp, dir) = valid_case();
    edit_json(&dir, |v| v["op"]["bias"] = json!(false));
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::BiasMismatch { op_bias: false })
    ));
}

#[test]
fn case_json_not_a_file() {
    let (_tmp, dir) = valid_case();
    fs::remove_file(dir.join("case.json")).unwrap();
    fs::create_dir(dir.join("case.json")).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::NotAFile { file: "case.json" })
    ));
}

#[test]
fn json_syntax_error() {
    let (_tmp, dir) = valid_case();
    fs::write(
        dir.join("case.json"),
        "{\n  \"format\": 1,\n  \"op\": {,\n}",
    )
    .unwrap();
    let e = read_case(&dir).unwrap_err();
    assert_eq!(
        e.to_string(),
        "case.json: JSON syntax error at line 3, column 10: key must be a string"
    );
    assert!(
        matches!(
            e,
            CaseError::Json {
                line: 3,
                column: 10,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn wrong_field_types() {
    let cases: [(Edit, &str); 6] = [
        (|v| v["op"]["kernel"] = json!("3x3"), "op.kernel"),
        (|v| v["op"]["stride"] = json!([1]), "op.stride"),
        (|v| v["op"]["relu"] = json!(1), "op.relu"),
        (|v| v["op"]["in_channels"] = json!(2.5), "op.in_channels"),
        (|v| v["arch"]["cores"] = json!("2"), "arch.cores"),
        (|v| v["input_shape"] = json!([1, 2, 5]), "input_shape"),
    ];
    for (edit, field) in cases {
        let e = json_error(edit);
        assert!(
            matches!(&e, CaseError::FieldType { field: f, .. } if f == field),
            "{field}: {e}"
        );
    }
}

#[test]
fn missing_field() {
    let e = json_error(|v| {
        v["op"].as_object_mut().unwrap().remove("groups");
    });
    assert!(
        matches!(&e, CaseError::MissingField { field } if field == "op.groups"),
        "{e}"
    );
}

#[test]
fn unknown_fields_are_refused() {
    let e = json_error(|v| v["op"]["dilaton"] = json!([1, 1]));
    assert!(
        matches!(&e, CaseError::UnknownField { field } if field == "op.dilaton"),
        "{e}"
    );
    let e = json_error(|v| v["comment"] = json!("hi"));
    assert!(
        matches!(&e, CaseError::UnknownField { field } if field == "comment"),
        "{e}"
    );
}

#[test]
fn unknown_op_kind() {
    let e = json_error(|v| v["op"]["kind"] = json!("conv3d"));
    assert!(
        matches!(&e, CaseError::UnknownOpKind { found } if found == "conv3d"),
        "{e}"
    );
}

#[test]
fn unsupported_format() {
    let e = json_error(|v| v["format"] = json!(2));
    assert!(
        matches!(&e, CaseError::UnsupportedFormat { found } if found == "2"),
        "{e}"
    );
    let e = json_error(|v| v["format"] = json!("1"));
    assert!(
        matches!(&e, CaseError::FieldType { field, .. } if field == "format"),
        "{e}"
    );
}

#[test]
fn zero_sizes() {
    let cases: [(Edit, &str); 4] = [
        (|v| v["op"]["stride"] = json!([0, 1]), "op.stride[0]"),
        (|v| v["op"]["kernel"] = json!([3, 0]), "op.kernel[1]"),
        (|v| v["input_shape"][0] = json!(0), "input_shape[0]"),
        (|v| v["arch"]["cores"] = json!(0), "arch.cores"),
    ];
    for (edit, field) in cases {
        let e = json_error(edit);
        assert!(
            matches!(&e, CaseError::ZeroSize { file: "case.json", field: f } if f == field),
            "{field}: {e}"
        );
    }
}

#[test]
fn negative_sizes() {
    let e = json_error(|v| v["op"]["padding"] = json!([1, -1, 1, 1]));
    assert!(
        matches!(&e, CaseError::Negative { field, value: -1 } if field == "op.padding[1]"),
        "{e}"
    );
    let e = json_error(|v| v["input_shape"][2] = json!(-5));
    assert!(
        matches!(&e, CaseError::Negative { field, value: -5 } if field == "input_shape[2]"),
        "{e}"
    );
}

#[test]
fn groups_must_divide_channels() {
    let e = json_error(|v| {
        v["op"]["in_channels"] = json!(3);
        v["input_shape"][1] = json!(3);
    });
    assert!(
        matches!(
            e,
            CaseError::GroupsDoNotDivide {
                field: "op.in_channels",
                value: 3,
                groups: 2
            }
        ),
        "{e}"
    );
}

#[test]
fn input_channels_disagree() {
    let e = json_error(|v| v["input_shape"][1] = json!(4));
    assert!(
        matches!(
            e,
            CaseError::Inconsistent {
                field: "input_shape[1]",
                value: 4,
                other_value: 2,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn output_below_one() {
    // Width 5 + 1 + 1 padding, kernel width 3 dilated by 4: spans 9.
    let e = json_error(|v| v["op"]["dilation"] = json!([1, 4]));
    assert!(
        matches!(
            e,
            CaseError::EmptyOutput {
                axis: "width",
                padded: 7,
                window: 9
            }
        ),
        "{e}"
    );
}

#[test]
fn wrong_dtypes() {
    let (_tmp, dir) = valid_case();
    fs::write(
        dir.join("input.npy"),
        npy("<i2", false, &[1, 2, 5, 5], &[0; 100]),
    )
    .unwrap();
    let e = read_case(&dir).unwrap_err();
    assert!(
        matches!(&e, CaseError::WrongDtype { file: "input.npy", found, .. } if found == "'<i2'"),
        "{e}"
    );

    let (_tmp, dir) = valid_case();
    fs::write(dir.join("bias.npy"), npy(">i4", false, &[4], &[0; 16])).unwrap();
    let e = read_case(&dir).unwrap_err();
    assert!(
        matches!(&e, CaseError::WrongDtype { file: "bias.npy", found, .. } if found == "'>i4'"),
        "{e}"
    );

    let (_tmp, dir) = valid_case();
    fs::write(
        dir.join("weight.npy"),
        npy("<f4", false, &[4, 1, 3, 3], &[0; 144]),
    )
    .unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::WrongDtype {
            file: "weight.npy",
            ..
        })
    ));
}

#[test]
fn shapes_disagree_with_case_json() {
    let (_tmp, dir) = valid_case();
    fs::write(
        dir.join("input.npy"),
        npy("|i1", false, &[1, 2, 5, 4], &[0; 40]),
    )
    .unwrap();
    let e = read_case(&dir).unwrap_err();
    assert!(
        matches!(&e, CaseError::ShapeMismatch { file: "input.npy", expected, found }
            if expected == &[1, 2, 5, 5] && found == &[1, 2, 5, 4]),
        "{e}"
    );
    // Wrong rank.
    let (_tmp, dir) = valid_case();
    fs::write(dir.join("weight.npy"), npy("|i1", false, &[4, 9], &[0; 36])).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::ShapeMismatch {
            file: "weight.npy",
            ..
        })
    ));
    // expected.npy is optional, but checked when present.
    let (_tmp, dir) = valid_case();
    fs::write(
        dir.join("expected.npy"),
        npy("<i4", false, &[1, 4, 5], &[0; 80]),
    )
    .unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::ShapeMismatch {
            file: "expected.npy",
            ..
        })
    ));
}

#[test]
fn sizes_beyond_limits() {
    let cases: [(Edit, &str); 4] = [
        (|v| v["input_shape"][3] = json!(100_000), "MAX_DIM"),
        (
            |v| v["op"]["padding"] = json!([1, 1, 1, 5000]),
            "MAX_WINDOW_PARAM",
        ),
        (
            |v| v["input_shape"] = json!([600, 2, 200, 200]),
            "MAX_INPUT_ELEMENTS",
        ),
        (
            |v| v["arch"]["local_memory_bytes"] = json!(1u64 << 40),
            "MAX_LOCAL_MEMORY_BYTES",
        ),
    ];
    for (edit, limit) in cases {
        let e = json_error(edit);
        assert!(
            matches!(e, CaseError::BeyondLimit { name, .. } if name == limit),
            "{limit}: {e}"
        );
    }
    // The output of a tiny input with huge padding, and the MAC count of a modest output.
    let e = json_error(|v| {
        v["input_shape"] = json!([1, 2, 1, 1]);
        v["op"]["padding"] = json!([1000, 1000, 1000, 1000]);
        v["op"]["out_channels"] = json!(64);
    });
    assert!(
        matches!(
            e,
            CaseError::BeyondLimit {
                name: "MAX_OUTPUT_ELEMENTS",
                ..
            }
        ),
        "{e}"
    );
    let e = json_error(|v| {
        v["input_shape"] = json!([1, 4096, 64, 64]);
        v["op"]["in_channels"] = json!(4096);
        v["op"]["out_channels"] = json!(64);
        v["op"]["groups"] = json!(1);
    });
    assert!(
        matches!(
            e,
            CaseError::BeyondLimit {
                name: "MAX_MACS",
                ..
            }
        ),
        "{e}"
    );
    // A hostile npy header length is refused before it is read.
    let (_tmp, dir) = valid_case();
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    fs::write(dir.join("input.npy"), bytes).unwrap();
    let e = read_case(&dir).unwrap_err();
    assert!(
        matches!(
            e,
            CaseError::BeyondLimit {
                file: "input.npy",
                name: "MAX_NPY_HEADER_BYTES",
                ..
            }
        ),
        "{e}"
    );
    // A huge case.json.
    let (_tmp, dir) = valid_case();
    fs::write(dir.join("case.json"), " ".repeat(2 << 20)).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::BeyondLimit {
            name: "MAX_CASE_JSON_BYTES",
            ..
        })
    ));
}

#[test]
fn result_beyond_int32() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let case_json = json!({
        "format": 1,
        "op": { "kind": "mvm", "in_features": 65536, "out_features": 2, "bias": true, "relu": false },
        "input_shape": [1, 65536],
        "arch": { "cores": 2, "arrays_per_core": 4, "array_rows": 8, "array_cols": 8, "local_memory_bytes": 65536 }
    });
    fs::write(dir.join("case.json"), case_json.to_string()).unwrap();
    fs::write(
        dir.join("input.npy"),
        npy("|i1", false, &[1, 65536], &[0x80; 65536]),
    )
    .unwrap();
    fs::write(
        dir.join("weight.npy"),
        npy("|i1", false, &[2, 65536], &[0x80; 131072]),
    )
    .unwrap();
    fs::write(
        dir.join("bias.npy"),
        npy("<i4", false, &[2], &i32_bytes(&[0, i32::MAX])),
    )
    .unwrap();
    let e = read_case(dir).unwrap_err();
    assert!(
        matches!(&e, CaseError::ResultOverflow { index, value } if index == &[0, 1] && *value == (1i64 << 30) + i32::MAX as i64),
        "{e}"
    );
}

#[test]
fn malformed_npy_files() {
    let cases: [(Vec<u8>, &str); 6] = [
        (b"PK\x03\x04 not npy at all".to_vec(), "the magic string"),
        (
            b"\x93NUM".to_vec(),
            "truncated: shorter than the 8-byte preamble",
        ),
        (
            b"\x93NUMPY\x09\x00\x10\x00".to_vec(),
            "format version 9.0 is not supported",
        ),
        (
            npy("|i1", false, &[1, 2, 5, 5], &[0; 10]),
            "truncated: shape [1, 2, 5, 5] needs 50 bytes",
        ),
        (npy("|i1", false, &[1, 2, 5, 5], &[0; 51]), "extra bytes"),
        (
            npy("|i1", false, &[1, 2, 5, 5], &[])[..20].to_vec(),
            "truncated header",
        ),
    ];
    for (bytes, reason) in cases {
        let (_tmp, dir) = valid_case();
        fs::write(dir.join("input.npy"), bytes).unwrap();
        let e = read_case(&dir).unwrap_err();
        assert!(
            matches!(&e, CaseError::Npy { file: "input.npy", reason: r } if r.contains(reason)),
            "{reason}: {e}"
        );
    }
}

#[test]
fn accepts_lt_i1_fortran_order_and_extra_files() {
    let (_tmp, dir) = valid_case();
    let original = read_case(&dir).unwrap();
    // input.npy as '<i1' in column-major order: the same values, stored transposed.
    let column_major: Vec<u8> = original.input.t().iter().map(|&v| v as u8).collect();
    fs::write(
        dir.join("input.npy"),
        npy("<i1", true, &[1, 2, 5, 5], &column_major),
    )
    .unwrap();
    fs::write(dir.join("report.txt"), "a saved finding's report").unwrap();
    fs::create_dir(dir.join("xbars")).unwrap();
    assert_eq!(read_case(&dir).unwrap(), original);
}

#[test]
fn writer_refuses_to_overwrite_and_replace_case_replaces() {
    let (_tmp, dir) = valid_case();
    let other = random_tensors(&spec(), 8).unwrap();
    let e = write_case(&other, &dir).unwrap_err();
    assert!(
        matches!(&e, CaseError::AlreadyExists { path } if path == &dir),
        "{e}"
    );
    assert_eq!(
        read_case(&dir).unwrap(),
        random_tensors(&spec(), 7).unwrap()
    );
    replace_case(&other, &dir).unwrap();
    assert_eq!(read_case(&dir).unwrap(), other);
    // No temporary or set-aside directory is left behind.
    let names: Vec<_> = fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("case")]);
}

#[test]
fn writer_refuses_an_inconsistent_case() {
    let mut case: Case = random_tensors(&spec(), 7).unwrap();
    case.bias = None;
    let tmp = tempfile::tempdir().unwrap();
    let e = write_case(&case, &tmp.path().join("case")).unwrap_err();
    assert!(
        matches!(e, CaseError::BiasMismatch { op_bias: true }),
        "{e}"
    );
    case.bias = Some(arr1(&[1, 2, 3, 4]));
    case.input = ArrayD::zeros(IxDyn(&[1, 2, 5, 6]));
    let e = write_case(&case, &tmp.path().join("case")).unwrap_err();
    assert!(
        matches!(
            e,
            CaseError::ShapeMismatch {
                file: "input.npy",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn reads_what_numpy_style_json_looks_like() {
    // The example of case-format.md, verbatim, with tensors written by hand.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::write(
        dir.join("case.json"),
        r#"{
  "format": 1,
  "op": { "kind": "mvm", "in_features": 20, "out_features": 7, "bias": false, "relu": true },
  "input_shape": [1, 20],
  "arch": { "cores": 2, "arrays_per_core": 4, "array_rows": 8, "array_cols": 8,
            "local_memory_bytes": 65536 }
}"#,
    )
    .unwrap();
    fs::write(dir.join("input.npy"), npy("|i1", false, &[1, 20], &[1; 20])).unwrap();
    fs::write(
        dir.join("weight.npy"),
        npy("|i1", false, &[7, 20], &[2; 140]),
    )
    .unwrap();
    fs::write(
        dir.join("expected.npy"),
        npy("<i4", false, &[1, 7], &i32_bytes(&[40; 7])),
    )
    .unwrap();
    let case = read_case(dir).unwrap();
    assert_eq!(
        case.expected.unwrap(),
        ArrayD::from_elem(IxDyn(&[1, 7]), 40)
    );
}

#[test]
fn writer_creates_missing_parents() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("corpus").join("finding-1");
    let case = random_tensors(&spec(), 3).unwrap();
    write_case(&case, &dir).unwrap();
    assert_eq!(read_case(&dir).unwrap(), case);
}

/// Every file of a case goes through the bounded reader: an empty file, a file above its
/// limit (sparse: refused from its size), and gzip where plain data belongs.
#[test]
fn empty_oversized_and_gzip_files_are_refused() {
    use pimdiff_input::InputError;
    let (_tmp, dir) = valid_case();
    fs::write(dir.join("case.json"), " \n").unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::Input {
            file: "case.json",
            source: InputError::Empty
        })
    ));
    let (_tmp, dir) = valid_case();
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&fs::read(dir.join("case.json")).unwrap())
            .unwrap();
        e.finish().unwrap()
    };
    fs::write(dir.join("case.json"), gz).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::Json { line: 1, .. })
    ));
    for file in ["input.npy", "weight.npy", "bias.npy", "expected.npy"] {
        let (_tmp, dir) = valid_case();
        fs::write(dir.join(file), "").unwrap();
        let e = read_case(&dir).unwrap_err();
        assert!(
            matches!(&e, CaseError::Input { file: f, source: InputError::Empty } if *f == file),
            "{file}: {e}"
        );
        fs::File::create(dir.join(file))
            .unwrap()
            .set_len(pimdiff_oracle::limits::MAX_CASE_NPY_BYTES + 1)
            .unwrap();
        let e = read_case(&dir).unwrap_err();
        assert!(
            matches!(&e, CaseError::BeyondLimit { file: f, name: "MAX_CASE_NPY_BYTES", .. } if *f == file),
            "{file}: {e}"
        );
    }
}

#[test]
fn structures_of_the_wrong_type_name_their_field() {
    let e = json_error(|v| v["op"] = json!("conv2d"));
    assert!(
        matches!(&e, CaseError::FieldType { field, expected: "an object", found }
            if field == "op" && found == "the string \"conv2d\""),
        "{e}"
    );
    let e = json_error(|v| v["op"]["kernel"] = json!([3, "3"]));
    assert!(
        matches!(&e, CaseError::FieldType { field, .. } if field == "op.kernel[1]"),
        "{e}"
    );
    let e = json_error(|v| v["op"]["in_features"] = json!(3));
    assert!(
        matches!(&e, CaseError::UnknownField { field } if field == "op.in_features"),
        "{e}"
    );
}

/// The hostile files of every reader (`pimdiff_input::hostile`), as a case's tensors and
/// `case.json`: each refused with its exact kind, naming the file, before any allocation.
#[test]
fn hostile_case_files() {
    use pimdiff_input::hostile::{gzip_zeros, npy_claiming, sparse_file};
    use pimdiff_input::InputError;
    // A header claiming 10^12 cells: refused from the header (the shape disagrees with
    // case.json) without reading or allocating for the data.
    let (_tmp, dir) = valid_case();
    fs::write(
        dir.join("input.npy"),
        npy_claiming("|i1", &[1, 1_000_000, 1_000_000, 1], &[0; 16]),
    )
    .unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::ShapeMismatch { file: "input.npy", found, .. }) if found == [1, 1_000_000, 1_000_000, 1]
    ));
    // Oversized (sparse: refused from its size), empty, a directory, a gzip bomb.
    let (_tmp, dir) = valid_case();
    sparse_file(&dir.join("weight.npy"), 1 << 40).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::BeyondLimit { file: "weight.npy", name: "MAX_CASE_NPY_BYTES", value, .. }) if value == 1 << 40
    ));
    let (_tmp, dir) = valid_case();
    fs::write(dir.join("weight.npy"), b"").unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::Input {
            file: "weight.npy",
            source: InputError::Empty
        })
    ));
    let (_tmp, dir) = valid_case();
    fs::remove_file(dir.join("bias.npy")).unwrap();
    fs::create_dir(dir.join("bias.npy")).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::NotAFile { file: "bias.npy" })
    ));
    let (_tmp, dir) = valid_case();
    fs::write(dir.join("input.npy"), gzip_zeros(1024)).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::Npy { file: "input.npy", reason }) if reason.contains("the magic string")
    ));
    // case.json: oversized, empty, a gzip bomb (not inflated: not JSON).
    let (_tmp, dir) = valid_case();
    sparse_file(&dir.join("case.json"), 1 << 40).unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::BeyondLimit {
            file: "case.json",
            name: "MAX_CASE_JSON_BYTES",
            ..
        })
    ));
    fs::write(dir.join("case.json"), b"").unwrap();
    assert!(matches!(
        read_case(&dir),
        Err(CaseError::Input {
            file: "case.json",
            source: InputError::Empty
        })
    ));
}
