//! `weir new`: scaffolds a plugin project in Rust, Python, JavaScript or C, in a directory of its own.
//!
//! The project holds a parent kind (a Rust type, or a CRD file for the other languages), a
//! reconciler that creates one ConfigMap and sets the `Ready` condition, two `weir test` fixtures,
//! an example parent for `weir dev --apply`, a `build.sh` and a README with the three commands.
//! It depends on the guest SDK of a Weir checkout by path (`--sdk DIR`, else `$WEIR_SDK`, else the
//! `guest-sdk/` of the checkout this binary was built from). The templates are the files under
//! `scaffold/templates/`, embedded in the binary; `{{placeholder}}`s are filled from [`Project`].

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::plugin::Contract;

mod templates;
#[cfg(test)]
mod tests;

/// A failed scaffold.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The project name cannot name a plugin, a package and a file.
    #[error(
        "project name {0:?}: use lowercase letters, digits and '-', starting with a letter (at most 40)"
    )]
    InvalidName(String),
    /// `--kind` is not a Kubernetes kind name.
    #[error("kind {0:?}: use an UpperCamelCase word of ASCII letters and digits")]
    InvalidKind(String),
    /// `--group` is not a DNS subdomain with a dot.
    #[error("group {0:?}: use a lowercase DNS name with at least one dot, e.g. example.dev")]
    InvalidGroup(String),
    /// The guest SDK directory lacks what the language needs.
    #[error(
        "no Weir guest SDK at {}: {missing} is missing; pass --sdk DIR (the guest-sdk/ directory of a Weir checkout) or set WEIR_SDK",
        dir.display()
    )]
    SdkNotFound {
        /// The directory looked in.
        dir: PathBuf,
        /// The file that should be there.
        missing: &'static str,
    },
    /// The target directory exists and is not empty.
    #[error("{} already exists and is not empty", .0.display())]
    Exists(PathBuf),
    /// Writing a file failed.
    #[error("writing {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` of this module.
pub type Result<T, E = ScaffoldError> = std::result::Result<T, E>;

/// The language of a scaffolded plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// A crate using `weir-guest-sdk`, built with cargo for `wasm32-wasip2`.
    Rust,
    /// A module using the `weir-reconciler` package, built with `weir-py build` (componentize-py).
    Python,
    /// An ES module using `@weir/guest-sdk`, built with `weir-js build` (componentize-js).
    Js,
    /// A C file using `weir.h`, built with `weir-c build` (the SDK's C bindings, clang, wasm-component-ld).
    C,
}

/// Arguments of `weir new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The project and plugin name (lowercase, digits, '-'), e.g. `greeter`.
    pub name: String,
    /// The plugin's language.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// The API group of the parent kind.
    #[arg(long, default_value = "example.dev")]
    pub group: String,
    /// The parent kind (default: the name in UpperCamelCase, `my-app` -> `MyApp`).
    #[arg(long)]
    pub kind: Option<String>,
    /// The directory to create (default: ./NAME).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// The guest SDK directory of a Weir checkout; default: the one this binary was built from.
    #[arg(long, env = "WEIR_SDK")]
    pub sdk: Option<PathBuf>,
}

impl NewArgs {
    /// Scaffolds the project and prints what was written and what to run next.
    pub fn execute(&self) -> Result<()> {
        let sdk = self.sdk.clone().unwrap_or_else(default_sdk);
        let project = Project::new(
            &self.name,
            self.lang,
            &self.group,
            self.kind.as_deref(),
            &sdk,
        )?;
        let dir = self
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from(&self.name));
        let files = project.write(&dir)?;
        println!(
            "created {} ({} files, {} plugin, parent {}/v1alpha1 {})",
            dir.display(),
            files.len(),
            self.lang.label(),
            project.group,
            project.kind
        );
        if let Some(hint) = project.setup_hint() {
            println!("note: {hint}");
        }
        println!(
            "next: cd {} && ./build.sh && weir test {}.wasm fixtures/",
            dir.display(),
            project.name
        );
        Ok(())
    }
}

/// The checkout's `guest-sdk/`, as known when this binary was compiled.
pub fn default_sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk")
}

/// What the templates are filled with.
#[derive(Clone, Debug)]
pub struct Project {
    /// The plugin and project name, e.g. `my-app`.
    pub name: String,
    /// The language.
    pub lang: Lang,
    /// The parent's API group.
    pub group: String,
    /// The parent's kind, e.g. `MyApp`.
    pub kind: String,
    /// The guest SDK directory, absolute.
    pub sdk: PathBuf,
}

impl Project {
    /// Checks the names and that `sdk` holds what `lang` needs.
    pub fn new(
        name: &str,
        lang: Lang,
        group: &str,
        kind: Option<&str>,
        sdk: &Path,
    ) -> Result<Self> {
        let name_ok = name.len() <= 40
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && !name.ends_with('-')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            return Err(ScaffoldError::InvalidName(name.to_owned()));
        }
        let kind = kind.map_or_else(|| camel_case(name), str::to_owned);
        let kind_ok = kind.starts_with(|c: char| c.is_ascii_uppercase())
            && kind.chars().all(|c| c.is_ascii_alphanumeric());
        if !kind_ok {
            return Err(ScaffoldError::InvalidKind(kind));
        }
        let group_ok = group.contains('.')
            && group.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            });
        if !group_ok {
            return Err(ScaffoldError::InvalidGroup(group.to_owned()));
        }
        let missing = match lang {
            Lang::Rust => "Cargo.toml",
            Lang::Python => "python/pyproject.toml",
            Lang::Js => "js/package.json",
            Lang::C => "c/weir.h",
        };
        let sdk = std::path::absolute(sdk)
            .ok()
            .and_then(|p| p.canonicalize().ok())
            .filter(|p| p.join(missing).is_file())
            .ok_or_else(|| ScaffoldError::SdkNotFound {
                dir: sdk.to_owned(),
                missing,
            })?;
        Ok(Project {
            name: name.to_owned(),
            lang,
            group: group.to_owned(),
            kind,
            sdk,
        })
    }

    /// Writes the project into `dir` (created; it must not exist or be empty); returns the files.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
        if occupied {
            return Err(ScaffoldError::Exists(dir.to_owned()));
        }
        let mut written = Vec::new();
        for template in templates::of(self.lang) {
            let path = dir.join(self.fill(template.path));
            let io = |source| ScaffoldError::Write {
                path: path.clone(),
                source,
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&path, self.fill(template.text)).map_err(io)?;
            if template.path.ends_with(".sh") {
                make_executable(&path).map_err(io)?;
            }
            written.push(path);
        }
        Ok(written)
    }

    /// `text` with every `{{placeholder}}` replaced.
    pub fn fill(&self, text: &str) -> String {
        let sdk = self.sdk.display().to_string();
        let module = self.name.replace('-', "_");
        let plural = format!("{}s", self.kind.to_ascii_lowercase());
        let singular = self.kind.to_ascii_lowercase();
        let (language, source, schema, sdk_note) = match self.lang {
            Lang::Rust => (
                "Rust",
                "src/lib.rs".to_owned(),
                "the parent kind is the Rust type there, and its CRD is generated from it",
                "`Cargo.toml` depends on the crate `weir-guest-sdk` by path.",
            ),
            Lang::Python => (
                "Python",
                format!("src/{module}.py"),
                "the parent kind's CRD is `crd.yaml`",
                "`requirements.txt` installs the package `weir-reconciler` (with `weir-py` and a pinned componentize-py) from a path; `build.sh` puts it in `.venv` (or `$WEIR_VENV`).",
            ),
            Lang::Js => (
                "JavaScript",
                format!("src/{}.js", self.name),
                "the parent kind's CRD is `crd.yaml`",
                "`package.json` depends on `@weir/guest-sdk` (with `weir-js` and a pinned componentize-js) by path: `npm install` links it, and its own tools must be installed in the checkout (`guest-sdk/setup.sh` there). Or install a packed SDK instead: `npm pack` in its `js/` directory, then `npm install PATH/weir-guest-sdk-*.tgz` here.",
            ),
            Lang::C => (
                "C",
                format!("src/{module}.c"),
                "the parent kind's CRD is `crd.yaml`",
                "`build.sh` runs the SDK's `c/bin/weir-c build` (the header `weir.h` documents the API), whose tools must be installed in the checkout (`guest-sdk/setup.sh` there: Debian's clang-19 and wasi-libc, wasm-component-ld under its `target/tools`).",
            ),
        };
        let files: String = templates::of(self.lang)
            .iter()
            .filter_map(|t| t.about.map(|about| format!("| `{}` | {about} |\n", t.path)))
            .collect();
        let contract = self.lang.contract().version();
        let mut out = text.to_owned();
        for (key, value) in [
            ("files", files.as_str()),
            ("name", &self.name),
            ("module", &module),
            ("Kind", &self.kind),
            ("plural", &plural),
            ("singular", &singular),
            ("group", &self.group),
            ("sdk", &sdk),
            ("contract", contract),
            ("language", language),
            ("source", &source),
            ("schema", schema),
            ("sdk_note", sdk_note),
        ] {
            out = out.replace(&format!("{{{{{key}}}}}"), value);
        }
        out
    }

    /// What to install before the first build, when the SDK's tools are not there yet.
    fn setup_hint(&self) -> Option<String> {
        match self.lang {
            Lang::Js => {
                let tools = self
                    .sdk
                    .join("js/node_modules/@bytecodealliance/componentize-js");
                (!tools.is_dir()).then(|| {
                    format!(
                        "the linked SDK has no build tools yet: run `npm ci --prefix {}` (or guest-sdk/setup.sh) once",
                        self.sdk.join("js").display()
                    )
                })
            }
            Lang::C => {
                let tools = self.sdk.join("../target/tools/bin/wasm-component-ld");
                (!tools.is_file()).then(|| {
                    format!(
                        "the SDK's checkout has no C build tools yet: run {} once",
                        self.sdk.join("setup.sh").display()
                    )
                })
            }
            Lang::Rust | Lang::Python => None,
        }
    }
}

impl Lang {
    /// The contract the language's SDK implements: Rust, Python and JavaScript speak the
    /// newest; C stays on 0.3.0 (its plugins run on the host's own cluster). The host still
    /// loads components built for 0.1.0.
    pub fn contract(self) -> Contract {
        match self {
            Lang::Rust | Lang::Python | Lang::Js => Contract::V0_4,
            Lang::C => Contract::V0_3,
        }
    }

    /// The language's name in messages.
    fn label(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
            Lang::C => "C",
        }
    }
}

/// `my-app` -> `MyApp`.
fn camel_case(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> std::io::Result<()> {
    Ok(())
}
