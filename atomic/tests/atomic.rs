//! The atomic writer's contract: complete or absent, never overwritten, leftovers cleaned.

use std::fs;

use pimdiff_atomic::{
    absent_or_empty, clean_temp, remove_dir, rename_dir, write_file, AtomicDir, Error, TEMP_PREFIX,
};

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_committed_directory_appears_whole_and_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("sub/finding");
    let dir = AtomicDir::create(&dest).unwrap();
    fs::write(dir.path().join("a.txt"), b"a").unwrap();
    fs::create_dir(dir.path().join("inner")).unwrap();
    fs::write(dir.path().join("inner/b.txt"), b"b").unwrap();
    assert!(!dest.exists(), "nothing visible before the commit");
    assert_eq!(dir.commit().unwrap(), dest);
    assert_eq!(fs::read(dest.join("inner/b.txt")).unwrap(), b"b");
    assert_eq!(names(&root.path().join("sub")), vec!["finding"]);
}

#[test]
fn a_dropped_directory_removes_its_work() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("finding");
    {
        let dir = AtomicDir::create(&dest).unwrap();
        fs::write(dir.path().join("a.txt"), b"a").unwrap();
    }
    assert!(names(root.path()).is_empty());
}

#[test]
fn an_existing_directory_is_never_overwritten() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("finding");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("keep.txt"), b"old").unwrap();
    assert!(matches!(AtomicDir::create(&dest), Err(Error::Exists { path }) if path == dest));
    // Became full between create and commit: refused, the other writer's result kept.
    let empty = root.path().join("race");
    let dir = AtomicDir::create(&empty).unwrap();
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("theirs.txt"), b"theirs").unwrap();
    assert!(matches!(dir.commit(), Err(Error::Exists { .. })));
    assert_eq!(fs::read(empty.join("theirs.txt")).unwrap(), b"theirs");
    assert_eq!(names(root.path()), vec!["finding", "race"]);
}

#[test]
fn an_empty_destination_directory_is_replaced() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("out");
    fs::create_dir(&dest).unwrap();
    let dir = AtomicDir::create(&dest).unwrap();
    fs::write(dir.path().join("x"), b"x").unwrap();
    dir.commit().unwrap();
    assert_eq!(names(&dest), vec!["x"]);
}

#[test]
fn commit_replacing_swaps_in_the_new_directory() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("case");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("old.txt"), b"old").unwrap();
    let dir = AtomicDir::create_anyway(&dest).unwrap();
    fs::write(dir.path().join("new.txt"), b"new").unwrap();
    dir.commit_replacing().unwrap();
    assert_eq!(names(&dest), vec!["new.txt"]);
    assert_eq!(names(root.path()), vec!["case"]);
}

#[test]
fn files_are_replaced_in_one_step() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("summary.json");
    write_file(&dest, b"one").unwrap();
    write_file(&dest, b"two").unwrap();
    assert_eq!(fs::read(&dest).unwrap(), b"two");
    assert_eq!(names(root.path()), vec!["summary.json"]);
    let missing_parent = root.path().join("no/such/dir/f");
    match write_file(&missing_parent, b"x") {
        Err(Error::Io { path, source }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            assert!(
                path.starts_with(root.path().join("no/such/dir")),
                "{path:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn leftovers_are_cleaned_and_removal_is_atomic() {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join(format!("{TEMP_PREFIX}x-1-0"))).unwrap();
    fs::write(root.path().join(format!("{TEMP_PREFIX}y-1-1")), b"").unwrap();
    fs::create_dir(root.path().join("keep")).unwrap();
    assert_eq!(clean_temp(root.path()).unwrap(), 2);
    assert_eq!(clean_temp(&root.path().join("missing")).unwrap(), 0);
    assert_eq!(names(root.path()), vec!["keep"]);
    rename_dir(&root.path().join("keep"), &root.path().join("moved")).unwrap();
    remove_dir(&root.path().join("moved")).unwrap();
    remove_dir(&root.path().join("moved")).unwrap();
    assert!(absent_or_empty(root.path()).unwrap());
}

/// A file of a directory under construction lands in its parent, which is created when
/// missing (and only then), and its bytes are exactly those given.
#[test]
fn write_new_creates_missing_parents_and_writes_into_existing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/c.bin");
    pimdiff_atomic::write_new(&nested, b"first").unwrap();
    assert_eq!(std::fs::read(&nested).unwrap(), b"first");
    let sibling = dir.path().join("a/b/d.bin");
    pimdiff_atomic::write_new(&sibling, b"second").unwrap();
    assert_eq!(std::fs::read(&sibling).unwrap(), b"second");
    // A parent that is a file is an error naming the path, not a panic.
    let under_file = nested.join("e.bin");
    let err = pimdiff_atomic::write_new(&under_file, b"x").unwrap_err();
    assert!(err.to_string().contains("c.bin"), "{err}");
}
