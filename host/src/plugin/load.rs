//! Loads a component into a [`Plugin`]: checks its header, compiles it (or maps it from the precompiled cache), finds its contract, links it once.
//!
//! The engine ([`Engine`]) compiles; this is where a compiled component meets the sandbox
//! (`sandbox.rs`) that calls it, so the engine itself knows nothing of a loaded plugin.

use std::borrow::Cow;
use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::engine::{Engine, LoadError};
use super::guest::Pre;
use super::limits::Limits;
use super::sandbox::Plugin;
use super::types::Contract;

impl Engine {
    /// Loads a component file; see [`Engine::load_bytes`].
    pub fn load_file(&self, path: &Path, limits: Limits) -> Result<Plugin, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.display().to_string(),
            source,
        })?;
        self.load_bytes(&path.display().to_string(), &bytes, limits)
    }

    /// Compiles (or fetches from the cache) a component, checks it implements
    /// the contract, links it once, and calls `describe`. `name_hint` names
    /// the plugin in errors until it has described itself.
    pub fn load_bytes(
        &self,
        name_hint: &str,
        bytes: &[u8],
        limits: Limits,
    ) -> Result<Plugin, LoadError> {
        let path = name_hint.to_string();
        check_component_header(bytes).map_err(|found| LoadError::NotAComponent {
            path: path.clone(),
            found,
        })?;
        let sha256 = hex::encode(Sha256::digest(bytes));
        let component = self.component(&path, &sha256, || Ok(Cow::Borrowed(bytes)))?;
        self.link(path, sha256, &component, limits)
    }

    /// Loads the component whose sha256 is `sha256` (hex) from `path`, trusting
    /// the digest: a source that verified it when it stored the file (the
    /// cluster source's blob cache) skips reading and hashing the component
    /// when its precompiled artifact exists.
    pub fn load_verified(
        &self,
        path: &Path,
        sha256: &str,
        limits: Limits,
    ) -> Result<Plugin, LoadError> {
        let name = path.display().to_string();
        let component = self.component(&name, sha256, || {
            let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
                path: name.clone(),
                source,
            })?;
            check_component_header(&bytes).map_err(|found| LoadError::NotAComponent {
                path: name.clone(),
                found,
            })?;
            Ok(Cow::Owned(bytes))
        })?;
        self.link(name, sha256.to_owned(), &component, limits)
    }

    /// Finds the component's contract, links it once with that version's linker.
    fn link(
        &self,
        path: String,
        sha256: String,
        component: &Component,
        limits: Limits,
    ) -> Result<Plugin, LoadError> {
        let wrong = |reason: String| LoadError::WrongContract {
            path: path.clone(),
            reason,
        };
        let contract = contract_of(self.wasmtime(), component).map_err(wrong)?;
        let linker = self
            .linker(contract)
            .ok_or_else(|| wrong(format!("no linker for {contract}")))?;
        let pre = linker
            .instantiate_pre(component)
            .map_err(|e| wrong(format!("{e:#}")))?;
        let pre = Pre::new(contract, pre).map_err(|e| wrong(format!("{e:#}")))?;
        let image = component.image_range();
        let code_bytes = (image.end.addr() - image.start.addr()) as u64;
        Plugin::new(self.clone(), pre, (sha256, code_bytes), limits, path)
    }
}

/// Tells a component from a core module or garbage before wasmtime's error
/// would (its message for a core module is about an unexpected section).
fn check_component_header(bytes: &[u8]) -> Result<(), &'static str> {
    match bytes {
        [0, b'a', b's', b'm', _, _, 1, 0, ..] => Ok(()),
        [0, b'a', b's', b'm', _, _, 0, 0, ..] => {
            Err("a core WebAssembly module; build with a component target such as wasm32-wasip2")
        }
        _ => Err("no WebAssembly header"),
    }
}

/// Which contract version a component was built against: the version of the
/// `weir:reconciler` interfaces it imports (every guest that logs or uses the
/// shared types imports `types`), or, importing none, the exports it has (0.1.0 has no
/// `select-related`; 0.3.0's `finalize` answers a record where 0.2.0's answers a variant;
/// 0.4.0's `reconcile` is asked with the parent's `cluster`).
/// A version this host does not speak is refused with a message that says which, instead
/// of a missing-import error.
fn contract_of(engine: &wasmtime::Engine, component: &Component) -> Result<Contract, String> {
    let ty = component.component_type();
    let mut found: Option<Contract> = None;
    for (name, _) in ty.imports(engine) {
        let Some(rest) = name.strip_prefix("weir:reconciler/") else {
            continue;
        };
        let Some((_, version)) = rest.split_once('@') else {
            return Err(format!("imports {name} without a version"));
        };
        let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
        let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
            return Err(format!("imports {name}: unreadable version"));
        };
        let contract = match (major, minor) {
            (0, 1) => Contract::V0_1,
            (0, 2) => Contract::V0_2,
            (0, 3) => Contract::V0_3,
            (0, 4) => Contract::V0_4,
            _ => return Err(format!("built against weir:reconciler@{version}")),
        };
        if found.is_some_and(|f| f != contract) {
            return Err(format!("imports two versions of weir:reconciler ({name})"));
        }
        found = Some(contract);
    }
    let contract = found.unwrap_or_else(|| {
        if ty.get_export(engine, "select-related").is_none() {
            Contract::V0_1
        } else if reconcile_is_told_the_cluster(engine, &ty) {
            Contract::V0_4
        } else if finalize_answers_a_record(engine, &ty) {
            Contract::V0_3
        } else {
            Contract::V0_2
        }
    });
    let exports: &[&str] = match contract {
        Contract::V0_1 => &["describe", "reconcile", "finalize"],
        Contract::V0_2 | Contract::V0_3 | Contract::V0_4 => {
            &["describe", "select-related", "reconcile", "finalize"]
        }
    };
    for export in exports {
        if ty.get_export(engine, export).is_none() {
            return Err(format!("it does not export `{export}`"));
        }
    }
    Ok(contract)
}

/// Whether the component's `reconcile` takes a record with a `cluster` field (0.4.0's
/// `reconcile-request`).
fn reconcile_is_told_the_cluster(
    engine: &wasmtime::Engine,
    ty: &wasmtime::component::types::Component,
) -> bool {
    use wasmtime::component::types::{ComponentItem, Type};
    let Some(ComponentItem::ComponentFunc(func)) =
        ty.get_export(engine, "reconcile").map(|export| export.ty)
    else {
        return false;
    };
    let param = func.params().next().map(|(_, ty)| ty);
    matches!(param, Some(Type::Record(r)) if r.fields().any(|f| f.name == "cluster"))
}

/// Whether the component's `finalize` answers `result<record, _>` (0.3.0's `finalize-response`).
fn finalize_answers_a_record(
    engine: &wasmtime::Engine,
    ty: &wasmtime::component::types::Component,
) -> bool {
    use wasmtime::component::types::{ComponentItem, Type};
    let Some(ComponentItem::ComponentFunc(func)) =
        ty.get_export(engine, "finalize").map(|export| export.ty)
    else {
        return false;
    };
    let result = func.results().next();
    matches!(result, Some(Type::Result(r)) if matches!(r.ok(), Some(Type::Record(_))))
}
