#!/usr/bin/env bash
# Installs the pinned mdBook that builds the manual (`mdbook build docs`) if it is not already
# in the cache, and prints its path on the last line of stdout.
#
#   "$(scripts/setup-mdbook.sh | tail -n1)" build docs
#
# Cache: target/tools/mdbook-<version>/bin/mdbook (MDBOOK_ROOT overrides the directory). Built
# with `cargo install --locked --no-default-features`: the book is built, never served or
# watched, and has no search index, so the HTTP server, file watcher and search features would
# only add build time on a 2-core CI machine. An mdbook already on PATH is used only when it is
# exactly the pinned version, so every machine renders the book with the same mdBook.
set -euo pipefail

version="0.5.4"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${MDBOOK_ROOT:-$root/target/tools/mdbook-$version}"
bin="$dest/bin/mdbook"

if command -v mdbook >/dev/null 2>&1 && [ "$(mdbook --version 2>/dev/null)" = "mdbook v$version" ]; then
    command -v mdbook
    exit 0
fi
if [ ! -x "$bin" ]; then
    echo "setup-mdbook: installing mdbook $version into $dest (once)" >&2
    CARGO_INCREMENTAL=0 cargo install --locked --no-default-features --version "$version" \
        --root "$dest" mdbook >&2
fi
"$bin" --version >&2
echo "$bin"
