//! `scripts/setup-python.sh` refuses an interpreter older than the pins need (numpy 2.4.6:
//! Python 3.11), exit 2 with a message naming the version found and the one required, before
//! it creates anything. The interpreter is a stand-in that says it is Python 3.9.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

#[test]
fn an_old_python_is_refused_naming_the_required_version() {
    let tmp = tempfile::tempdir().unwrap();
    let python = tmp.path().join("python3.9");
    std::fs::write(
        &python,
        "#!/bin/sh\n# Python 3.9 as far as setup-python.sh asks.\n\
         case \"$2\" in *print*) echo 3.9 ;; *version_info*) exit 1 ;; *) exit 0 ;; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let venv = tmp.path().join("venv");
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/setup-python.sh"
        ))
        .env("PYTHON", &python)
        .env("PIMDIFF_VENV", &venv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "setup-python: {} is Python 3.9; the pinned packages (numpy 2.4.6 in \
             scripts/python-requirements.txt) need Python 3.11 or newer: install it, or set \
             PYTHON to one\n",
            python.display()
        )
    );
    assert!(!venv.exists());
}
