#![no_main]
// The body lives in the library so `cargo test` runs it on stable over fuzz/corpus/interp/.
libfuzzer_sys::fuzz_target!(|data: &[u8]| pimdiff::fuzz_targets::interp(data));
