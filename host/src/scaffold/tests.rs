use super::*;

fn sdk() -> PathBuf {
    default_sdk()
}

#[test]
fn a_dashed_name_becomes_an_upper_camel_case_kind() {
    let project = Project::new("my-app2", Lang::Rust, "example.dev", None, &sdk()).unwrap();
    assert_eq!(project.kind, "MyApp2");
    assert_eq!(
        project.fill("{{plural}}.{{group}} {{module}}"),
        "myapp2s.example.dev my_app2"
    );
}

#[test]
fn names_kinds_and_groups_that_kubernetes_or_the_languages_refuse_are_refused() {
    for name in ["My-App", "1app", "app-", "app_x", ""] {
        let refused = Project::new(name, Lang::Rust, "example.dev", None, &sdk());
        assert!(
            matches!(refused, Err(ScaffoldError::InvalidName(_))),
            "{name:?}"
        );
    }
    let kind = Project::new("app", Lang::Rust, "example.dev", Some("my-kind"), &sdk());
    assert!(matches!(kind, Err(ScaffoldError::InvalidKind(_))));
    for group in ["example", "Example.dev", "example..dev"] {
        let refused = Project::new("app", Lang::Rust, group, None, &sdk());
        assert!(
            matches!(refused, Err(ScaffoldError::InvalidGroup(_))),
            "{group:?}"
        );
    }
}

#[test]
fn an_sdk_directory_without_the_languages_package_is_refused() {
    let empty = tempfile::tempdir().unwrap();
    for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C] {
        let refused = Project::new("app", lang, "example.dev", None, empty.path());
        assert!(matches!(refused, Err(ScaffoldError::SdkNotFound { .. })));
    }
}

#[test]
fn every_language_gets_its_files_with_every_placeholder_filled() {
    let root = tempfile::tempdir().unwrap();
    for (lang, own) in [
        (Lang::Rust, ["Cargo.toml", "src/lib.rs"]),
        (Lang::Python, ["requirements.txt", "src/hello_app.py"]),
        (Lang::Js, ["package.json", "src/hello-app.js"]),
        (Lang::C, ["crd.yaml", "src/hello_app.c"]),
    ] {
        let project = Project::new("hello-app", lang, "demo.example.dev", None, &sdk()).unwrap();
        let dir = root.path().join(format!("{lang:?}"));
        let files = project.write(&dir).unwrap();
        for file in own
            .iter()
            .chain(&["build.sh", "README.md", "examples/hello-app.yaml"])
        {
            assert!(dir.join(file).is_file(), "{lang:?}: {file} missing");
        }
        assert_eq!(
            std::fs::read_dir(dir.join("fixtures")).unwrap().count(),
            2,
            "{lang:?}: two fixtures"
        );
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            assert!(
                !text.contains("{{"),
                "{}: a placeholder is left",
                file.display()
            );
            assert!(
                !text.contains("}}"),
                "{}: a placeholder is left",
                file.display()
            );
        }
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            readme.contains("weir test hello-app.wasm fixtures/"),
            "{readme}"
        );
        assert!(readme.contains("kind HelloApp") || readme.contains("`HelloApp`"));
    }
}

#[test]
fn a_directory_that_is_not_empty_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.txt"), "keep").unwrap();
    let project = Project::new("app", Lang::Js, "example.dev", None, &sdk()).unwrap();
    assert!(matches!(
        project.write(dir.path()),
        Err(ScaffoldError::Exists(_))
    ));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_parent_in_the_fixtures_is_the_kind_of_the_crd() {
    let project = Project::new("app", Lang::Python, "acme.io", Some("Widget"), &sdk()).unwrap();
    let crd: serde_json::Value =
        crate::yaml::from_str(&project.fill(include_str!("templates/common/crd.yaml"))).unwrap();
    assert_eq!(crd["metadata"]["name"].as_str(), Some("widgets.acme.io"));
    assert_eq!(crd["spec"]["names"]["kind"].as_str(), Some("Widget"));
    let fixture = project.fill(include_str!(
        "templates/common/fixtures/01-new-object-gets-its-config-map.yaml"
    ));
    let case = crate::offline::parse(&fixture).unwrap();
    assert_eq!(case.parent["apiVersion"], "acme.io/v1alpha1");
    assert_eq!(case.parent["kind"], "Widget");
}

#[test]
fn the_version_line_names_every_contract_the_engine_loads() {
    for contract in Contract::ALL {
        assert!(
            crate::plugin::VERSION_LINE.contains(&format!("{contract}")),
            "{} misses {contract}",
            crate::plugin::VERSION_LINE
        );
        // 0.1.0 is `wit/reconciler.wit`; later versions live in a directory of their own.
        let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        let file = match contract {
            Contract::V0_1 => wit.join("reconciler.wit"),
            other => wit.join(other.version()).join("reconciler.wit"),
        };
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(&format!("package {contract};")),
            "{}",
            file.display()
        );
    }
}

#[test]
fn every_sdk_package_is_versioned_with_the_contract_it_implements() {
    let sdk = sdk();
    for (lang, file, line) in [
        (Lang::Rust, "Cargo.toml", "version = "),
        (Lang::Python, "python/pyproject.toml", "version = "),
        (Lang::Js, "js/package.json", "\"version\": "),
        (Lang::C, "c/weir.h", "#define WEIR_SDK_VERSION "),
    ] {
        let (major, minor) = {
            let mut parts = lang.contract().version().split('.');
            (parts.next().unwrap(), parts.next().unwrap())
        };
        let series = format!("\"{major}.{minor}.");
        let text = std::fs::read_to_string(sdk.join(file)).unwrap();
        let found = text
            .lines()
            .find(|l| l.trim_start().starts_with(line))
            .unwrap();
        assert!(
            found.contains(&series),
            "{file}: {found}, expected {series}"
        );
    }
}
