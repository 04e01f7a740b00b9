use super::*;

#[test]
fn sources_are_what_the_author_edits_not_what_builds_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("build.sh"), "").unwrap();
    std::fs::create_dir(dir.path().join("fixtures")).unwrap();
    let project = Project::open(dir.path()).unwrap();
    let root = project.dir().to_owned();
    for source in [
        "src/lib.rs",
        "fixtures/01-new.yaml",
        "Cargo.toml",
        "src/plugin.py",
        "crd.yaml",
    ] {
        assert!(project.is_source(&root.join(source)), "{source}");
    }
    for built in [
        "target/wasm32-wasip2/release/x.wasm",
        "node_modules/a/index.js",
        ".venv/lib/site.py",
        ".weir/plugins/hello.wasm",
        "hello.wasm",
        "Cargo.lock",
        "package-lock.json",
        "src/__pycache__/plugin.cpython-312.pyc",
        "src/.lib.rs.swp",
    ] {
        assert!(!project.is_source(&root.join(built)), "{built}");
    }
    assert!(!project.is_source(Path::new("/elsewhere/src/lib.rs")));
    assert!(project.served_dir().is_dir());
}

#[test]
fn a_component_newer_than_every_source_is_up_to_date_and_a_later_save_is_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("build.sh"), "").unwrap();
    std::fs::create_dir_all(dir.path().join("fixtures")).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    for file in ["build.sh", "src/lib.rs"] {
        std::fs::write(dir.path().join(file), "").unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join(file))
            .unwrap();
        f.set_modified(old).unwrap();
    }
    let project = Project::open(dir.path()).unwrap();
    assert_eq!(project.up_to_date(), None, "nothing built yet");
    std::fs::write(project.dir().join("hello.wasm"), "").unwrap();
    assert_eq!(project.up_to_date(), Some(project.dir().join("hello.wasm")));
    std::fs::write(project.dir().join("src/lib.rs"), "// saved").unwrap();
    let later = SystemTime::now() + Duration::from_secs(1);
    std::fs::File::options()
        .write(true)
        .open(project.dir().join("src/lib.rs"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    assert_eq!(project.up_to_date(), None, "a source saved after the build");
}

#[test]
fn a_directory_without_build_sh_is_not_a_project() {
    let dir = tempfile::tempdir().unwrap();
    let err = Project::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("build.sh is missing"), "{err}");
}
