#!/usr/bin/env python3
"""Checks the built book for dead links: every relative link and anchor must resolve.

    "$(scripts/setup-mdbook.sh | tail -n1)" build docs && python3 scripts/check-book-links.py docs/book

Reads every HTML page mdBook wrote (standard library only) and checks each `href` and `src`
that is not an external URL: the file it names must exist in the built book (a directory
means its `index.html`), and a `#fragment` must be the `id` (or `name`) of an element of that
page. Links inside code blocks are text, not links, and are not checked. Prints each dead link
as `PAGE: LINK: why` and exits 1 when there is one, 0 when there is none, 2 on bad usage.

A link is dead in the built book even when the Markdown file it names exists: mdBook writes a
chapter `README.md` as `index.html`, and a link to a file outside the book's source folder
leads nowhere once the book is published.
"""

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# mdBook's own pages and assets: not chapters, and not written by us.
SKIPPED_PAGES = {"print.html", "toc.html", "404.html"}


class Page(HTMLParser):
    """The links of one page and the anchors it defines."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []  # (attribute value, line)
        self.anchors = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.anchors.add(attrs[key])
        for key in ("href", "src"):
            value = attrs.get(key)
            if value is not None and tag in ("a", "img", "link", "script", "iframe", "source"):
                self.links.append((value, self.getpos()[0]))


def parse(path, cache):
    if path not in cache:
        page = Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def problems(book):
    cache = {}
    found = []
    for page_path in sorted(book.rglob("*.html")):
        if page_path.name in SKIPPED_PAGES:
            continue
        rel_page = page_path.relative_to(book)
        for link, line in parse(page_path, cache).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            if not parts.path and not parts.fragment:
                continue
            target = page_path if not parts.path else (page_path.parent / unquote(parts.path))
            target = Path(*resolve(target.parts))
            if target.is_dir():
                target = target / "index.html"
            where = f"{rel_page}:{line}: {link}"
            try:
                target.relative_to(book)
            except ValueError:
                found.append(f"{where}: leads out of the book")
                continue
            if not target.exists():
                found.append(f"{where}: no {target.relative_to(book)} in the built book")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                if fragment not in parse(target, cache).anchors:
                    found.append(f"{where}: no anchor #{fragment} in {target.relative_to(book)}")
    return found


def resolve(parts):
    """`a/b/../c` as `a/c`, without following links (the book is plain files)."""
    out = []
    for part in parts:
        if part == "..":
            if out and out[-1] != "/":
                out.pop()
        elif part != ".":
            out.append(part)
    return out


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    book = Path(argv[1]).resolve()
    if not (book / "index.html").is_file():
        print(f"check-book-links: {argv[1]} is not a built book (no index.html)", file=sys.stderr)
        return 2
    found = problems(book)
    for p in found:
        print(p)
    pages = sum(1 for p in book.rglob("*.html") if p.name not in SKIPPED_PAGES)
    if found:
        print(f"check-book-links: {len(found)} dead link(s) in {pages} pages", file=sys.stderr)
        return 1
    print(f"check-book-links: every relative link and anchor of {pages} pages resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
