//! `scripts/check-book-links.py`, the link check CI runs on the built book, finds what it
//! promises: a link to a page the book does not have, an anchor a page does not define, and a
//! link out of the book; links inside code and external URLs are not its business.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/check-book-links.py")
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn dead_links_and_anchors_of_a_built_book_are_named_with_their_page_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book");
    write(
        &book,
        "index.html",
        "<html><body>\n<a href=\"guide/tour.html#start\">tour</a>\n</body></html>\n",
    );
    write(
        &book,
        "guide/tour.html",
        "<html><body><h1 id=\"start\">Tour</h1>\n\
         <a href=\"../results/README.html\">results</a>\n\
         <a href=\"#nowhere\">here</a>\n\
         <a href=\"../../corpus/README.md\">corpus</a>\n\
         <a href=\"https://example.org/x.html\">outside</a>\n\
         <a href=\"../results/index.html#figures\">figures</a>\n\
         <pre><code>href=\"missing.html\"</code></pre>\n\
         <img src=\"../lowerings.svg\">\n\
         </body></html>\n",
    );
    write(
        &book,
        "results/index.html",
        "<h2 id=\"figures\">Figures</h2>",
    );
    write(&book, "lowerings.svg", "<svg/>");
    let out = Command::new("python3")
        .arg(script())
        .arg(&book)
        .output()
        .expect("python3 runs the link check");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "guide/tour.html:2: ../results/README.html: no results/README.html in the built book\n\
         guide/tour.html:3: #nowhere: no anchor #nowhere in guide/tour.html\n\
         guide/tour.html:4: ../../corpus/README.md: leads out of the book\n"
    );

    // The same book without them passes.
    write(
        &book,
        "guide/tour.html",
        "<h1 id=\"start\">Tour</h1><a href=\"../results/#figures\">figures</a>",
    );
    let out = Command::new("python3")
        .arg(script())
        .arg(&book)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "check-book-links: every relative link and anchor of 3 pages resolves\n"
    );
}

#[test]
fn a_directory_that_is_not_a_built_book_is_bad_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(script())
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
