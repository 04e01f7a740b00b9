//! The template files of each language, embedded in the binary.

use super::Lang;

/// One file of a scaffolded project.
pub(super) struct Template {
    /// Where it goes in the project (placeholders allowed).
    pub path: &'static str,
    /// Its text, with `{{placeholder}}`s.
    pub text: &'static str,
    /// Its line in the README's file table, if it has one.
    pub about: Option<&'static str>,
}

/// Declares a template from a file under `templates/`.
macro_rules! template {
    ($path:literal, $file:literal, $about:expr) => {
        Template {
            path: $path,
            text: include_str!(concat!("templates/", $file)),
            about: $about,
        }
    };
}

/// Every language's fixtures, example and README.
static COMMON: [Template; 4] = [
    template!(
        "fixtures/01-new-object-gets-its-config-map.yaml",
        "common/fixtures/01-new-object-gets-its-config-map.yaml",
        None
    ),
    template!(
        "fixtures/02-missing-message-is-a-permanent-error.yaml",
        "common/fixtures/02-missing-message-is-a-permanent-error.yaml",
        None
    ),
    template!("examples/{{name}}.yaml", "common/example.yaml", None),
    template!("README.md", "common/README.md", None),
];

static RUST: [Template; 4] = [
    template!(
        "Cargo.toml",
        "rust/Cargo.toml.tmpl",
        Some("the crate: `weir-guest-sdk` by path, small release builds")
    ),
    template!(
        "src/lib.rs",
        "rust/src/lib.rs",
        Some("the parent type (its CRD is derived) and the reconciler, with a native test")
    ),
    template!(
        "build.sh",
        "rust/build.sh",
        Some("`cargo build --target wasm32-wasip2 --release`, copied to `{{name}}.wasm`")
    ),
    template!(".gitignore", "rust/gitignore", None),
];

static PYTHON: [Template; 5] = [
    template!(
        "requirements.txt",
        "python/requirements.txt",
        Some("the SDK package `weir-reconciler`, by path")
    ),
    template!(
        "src/{{module}}.py",
        "python/src/plugin.py",
        Some("the reconciler")
    ),
    template!(
        "crd.yaml",
        "common/crd.yaml",
        Some("the parent kind's CRD, embedded by the build")
    ),
    template!(
        "build.sh",
        "python/build.sh",
        Some("installs the SDK once, then `weir-py build`")
    ),
    template!(".gitignore", "python/gitignore", None),
];

static JS: [Template; 5] = [
    template!(
        "package.json",
        "js/package.json",
        Some("`@weir/guest-sdk` by path; `npm run build` runs `weir-js build`")
    ),
    template!(
        "src/{{name}}.js",
        "js/src/plugin.js",
        Some("the reconciler")
    ),
    template!(
        "crd.yaml",
        "common/crd.yaml",
        Some("the parent kind's CRD, embedded by the build")
    ),
    template!(
        "build.sh",
        "js/build.sh",
        Some("`npm install` once, then `npm run build`")
    ),
    template!(".gitignore", "js/gitignore", None),
];

static C: [Template; 4] = [
    template!(
        "src/{{module}}.c",
        "c/src/plugin.c",
        Some("the reconciler (`weir.h` from the SDK)")
    ),
    template!(
        "crd.yaml",
        "common/crd.yaml",
        Some("the parent kind's CRD, embedded by the build")
    ),
    template!(
        "build.sh",
        "c/build.sh",
        Some("`weir-c build`: the contract's C bindings, clang for wasm32-wasi, a component")
    ),
    template!(".gitignore", "c/gitignore", None),
];

/// The files of a project in `lang`, the language's own first.
pub(super) fn of(lang: Lang) -> Vec<&'static Template> {
    let own: &'static [Template] = match lang {
        Lang::Rust => &RUST,
        Lang::Python => &PYTHON,
        Lang::Js => &JS,
        Lang::C => &C,
    };
    own.iter().chain(COMMON.iter()).collect()
}
