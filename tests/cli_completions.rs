//! `pimdiff completions SHELL` and `pimdiff man`: generated from the CLI definition, they name
//! every subcommand `pimdiff --help` lists; the top-level manual page as a snapshot.

use std::process::Command;

fn pimdiff(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .output()
        .expect("spawn pimdiff");
    assert_eq!(out.status.code(), Some(0), "pimdiff {args:?}");
    assert!(out.stderr.is_empty(), "pimdiff {args:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The subcommands `pimdiff --help` lists, `help` excluded.
fn subcommands() -> Vec<String> {
    let help = pimdiff(&["--help"]);
    let listed = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("a Commands: section");
    let names: Vec<String> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|&n| n != "help")
        .map(str::to_string)
        .collect();
    for expected in ["run", "new-case", "hunt", "pimcomp", "completions", "man"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    names
}

#[test]
fn completion_scripts_name_every_subcommand() {
    let names = subcommands();
    for (shell, marker) in [
        ("bash", "complete -F _pimdiff"),
        ("zsh", "#compdef pimdiff"),
        ("fish", "complete -c pimdiff"),
    ] {
        let script = pimdiff(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell}: no {name}");
        }
    }
    let (code, err) = {
        let out = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
            .args(["completions", "tcsh"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn the_manual_names_every_subcommand() {
    let names = subcommands();
    let page = pimdiff(&["man"]);
    for name in &names {
        // roff escapes each hyphen.
        let reference = format!("pimdiff\\-{}(1)", name.replace('-', "\\-"));
        assert!(page.contains(&reference), "no {reference}");
    }
    insta::assert_snapshot!(page);
}

#[test]
fn the_manual_pages_go_into_a_directory() {
    let names = subcommands();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let said = pimdiff(&["man", "--out", dir.to_str().unwrap()]);
    assert_eq!(
        said,
        format!("wrote the manual pages into {}\n", dir.display())
    );
    let top = std::fs::read_to_string(dir.join("pimdiff.1")).unwrap();
    assert_eq!(top, pimdiff(&["man"]));
    for name in &names {
        let page = std::fs::read_to_string(dir.join(format!("pimdiff-{name}.1"))).unwrap();
        assert!(page.contains(".SH NAME"), "pimdiff-{name}.1");
    }
}
