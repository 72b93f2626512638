//! Write → read gives back the same case; damaged files give errors, never panics.

mod common;

use pimdiff_oracle::io::{read_case, write_case};
use pimdiff_oracle::{random_tensors, reference};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn write_then_read_is_identity(
        spec in prop_oneof![common::conv_spec(), common::mvm_spec()],
        seed in any::<u64>(),
        with_expected in any::<bool>(),
    ) {
        let mut case = random_tensors(&spec, seed).unwrap();
        if with_expected {
            case.expected = Some(reference(&case).unwrap());
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("case");
        write_case(&case, &dir).unwrap();
        prop_assert_eq!(read_case(&dir).unwrap(), case);
    }

    /// Overwriting bytes of any file of a valid case gives a case or an error; never a panic.
    #[test]
    fn damaged_files_never_panic(
        spec in prop_oneof![common::conv_spec(), common::mvm_spec()],
        file in prop_oneof![Just("case.json"), Just("input.npy"), Just("weight.npy")],
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let case = random_tensors(&spec, 1).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("case");
        write_case(&case, &dir).unwrap();
        let path = dir.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        std::fs::write(&path, bytes).unwrap();
        let _ = read_case(&dir);
    }
}
