#!/bin/bash -eu
# Builds pimdiff's cargo-fuzz targets for ClusterFuzzLite (run inside the image of
# .clusterfuzzlite/Dockerfile, which sets $SRC, $OUT and the sanitizer flags).
#
# For every target in fuzz/fuzz_targets/: the fuzzer binary, its committed seed corpus
# (fuzz/corpus/<target>/seed-*, as <target>_seed_corpus.zip) and, for the two JSON readers,
# their dictionary (<target>.dict). The targets' bodies live in src/fuzz_targets.rs.
cd "$SRC/pimdiff"

cargo fuzz build -O --debug-assertions

built=fuzz/target/x86_64-unknown-linux-gnu/release
for source in fuzz/fuzz_targets/*.rs; do
    target=$(basename "$source" .rs)
    cp "$built/$target" "$OUT/"
    seeds=$(find "fuzz/corpus/$target" -maxdepth 1 -type f -name 'seed-*' 2>/dev/null || true)
    if [ -n "$seeds" ]; then
        # shellcheck disable=SC2086 # one file name per word: the seeds have no spaces
        zip -q -j "$OUT/${target}_seed_corpus.zip" $seeds
    fi
done
cp fuzz/dicts/program.dict "$OUT/parse_program.dict"
cp fuzz/dicts/case.dict "$OUT/parse_case.dict"
