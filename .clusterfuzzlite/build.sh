#!/bin/bash -eu
# Builds pimdiff's cargo-fuzz targets for ClusterFuzzLite (run inside the image of
# .clusterfuzzlite/Dockerfile, which sets $SRC, $OUT and the sanitizer flags).
#
# For every target in fuzz/fuzz_targets/: the fuzzer binary, its committed seed corpus
# (fuzz/corpus/<target>/seed-*, as <target>_seed_corpus.zip) and, for the two JSON readers,
# their dictionary (<target>.dict). The targets' bodies live in targets/pimsim/src/fuzz_targets.rs.
#
# Your own compiler instead of the in-repo one (docs/scale-out.md, "Your own compiler"): when
# .clusterfuzzlite/compiler-cmd exists, .clusterfuzzlite/compiler-setup.sh (if any) runs first
# to build the compiler and install it under $OUT (the fuzzers run from $OUT, without this
# repository), then the command is copied to $OUT/pimdiff-compiler-cmd, where the lowering
# targets read it ({here} in it is $OUT at run time).
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

if [ -f .clusterfuzzlite/compiler-cmd ]; then
    if [ -f .clusterfuzzlite/compiler-setup.sh ]; then
        bash .clusterfuzzlite/compiler-setup.sh
    fi
    cp .clusterfuzzlite/compiler-cmd "$OUT/pimdiff-compiler-cmd"
    echo "build.sh: the lowering targets check: $(head -1 .clusterfuzzlite/compiler-cmd)"
fi
