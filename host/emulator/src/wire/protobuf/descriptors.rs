//! Generates `k8s.binpb`, the message descriptors of the built-in kinds, from k8s-pb's pinned bindings.
//!
//! k8s-pb ships prost's generated Rust, not the `.proto` files, and no descriptor set. Each of its
//! messages is a struct whose fields carry `#[prost(TYPE, LABEL, tag = "N")]`: everything a
//! descriptor needs but the JSON names, which come from the kinds' OpenAPI schemas
//! ([`crate::wire::builtin_schema`]). This file reads those sources with `syn`, keeps the messages
//! the served kinds (plus the `runtime.Unknown` envelope and the self-reviews) reach, and writes
//! one proto2 file per package. The test below fails when `k8s.binpb` differs from what the pinned
//! k8s-pb gives; `WEIR_BLESS=1` rewrites it.
//!
//! One file of about 500 lines on purpose: a test-only generator read once from top to bottom
//! (k8s-pb's sources, then the messages kept, then the descriptors), none of it used elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet, MessageOptions,
};
use serde_json::Value;

use crate::wire::builtin_schema::{Schemas, schemas};

const REGENERATE: &str =
    "WEIR_BLESS=1 cargo test -p weir-emulator --lib wire::protobuf::descriptors";

/// Messages kept besides the served kinds: the envelope of every body and the self-reviews.
const EXTRA_ROOTS: &[&str] = &[
    "k8s.io.apimachinery.pkg.runtime.Unknown",
    "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
    "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
];

/// What a field holds, as its `#[prost]` attribute and Rust type say.
#[derive(Debug, Clone)]
enum Ty {
    Scalar(Type),
    /// A message, by its full name (no leading dot).
    Message(String),
    /// A map from string to the value type.
    Map(Box<Ty>),
}

#[derive(Debug)]
struct Field {
    /// The Rust field name (`host_ipc`, `r#type` without `r#`).
    rust: String,
    number: i32,
    repeated: bool,
    ty: Ty,
}

#[derive(Debug)]
struct Msg {
    package: String,
    /// The Rust name (`JsonSchemaProps`); the descriptor uses the API's spelling where the schema
    /// has one (`JSONSchemaProps`).
    name: String,
    fields: Vec<Field>,
}

/// k8s-pb's `src/` directory, found through `cargo metadata` (the pinned version in Cargo.lock).
/// Offline and for this machine's platform only: the packages of other platforms (Android's,
/// Windows') are not downloaded by a build here, and the test does not reach the network.
fn k8s_pb_src() -> PathBuf {
    let rustc = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .expect("rustc -vV names the host platform");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host, "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let manifest = meta["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "k8s-pb"))
        .and_then(|p| p["manifest_path"].as_str())
        .expect("k8s-pb is a dependency");
    Path::new(manifest)
        .parent()
        .expect("a manifest has a directory")
        .join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("k8s-pb's sources are readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.file_name().is_some_and(|n| n == "mod.rs") {
            out.push(p);
        }
    }
}

/// Every message k8s-pb generates, by full name.
fn messages(src: &Path) -> BTreeMap<String, Msg> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let module: Vec<String> = file
            .parent()
            .expect("mod.rs has a directory")
            .strip_prefix(src)
            .expect("under src")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        let parsed = syn::parse_file(&text).expect("k8s-pb's sources parse");
        for item in parsed.items {
            let syn::Item::Struct(s) = item else { continue };
            if !derives_message(&s.attrs) {
                continue;
            }
            let package = format!("k8s.io.{}", module.join("."));
            let fields = s.fields.iter().filter_map(|f| field(&module, f)).collect();
            let name = s.ident.to_string();
            out.insert(
                format!("{package}.{name}"),
                Msg {
                    package,
                    name,
                    fields,
                },
            );
        }
    }
    out
}

fn derives_message(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().contains("Message"))
    })
}

fn scalar(name: &str) -> Option<Type> {
    Some(match name {
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "bool" => Type::Bool,
        "int32" => Type::Int32,
        "int64" => Type::Int64,
        "double" => Type::Double,
        "float" => Type::Float,
        _ => return None,
    })
}

/// One `#[prost(...)]` field, with its message type resolved against `module`.
fn field(module: &[String], f: &syn::Field) -> Option<Field> {
    let attr = f.attrs.iter().find(|a| a.path().is_ident("prost"))?;
    let mut kind = None;
    let mut map = None;
    let mut number = 0;
    let mut repeated = false;
    attr.parse_nested_meta(|m| {
        let key = m
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "tag" => {
                number = m
                    .value()?
                    .parse::<syn::LitStr>()?
                    .value()
                    .parse()
                    .unwrap_or(0)
            }
            "repeated" => repeated = true,
            "btree_map" | "hash_map" | "map" => {
                map = Some(m.value()?.parse::<syn::LitStr>()?.value())
            }
            "bytes" | "packed" => {
                if key == "bytes" {
                    kind = Some("bytes".to_string());
                }
                if m.input.peek(syn::Token![=]) {
                    m.value()?.parse::<syn::LitStr>()?;
                }
            }
            "optional" | "boxed" | "required" => {}
            other => kind = Some(other.to_string()),
        }
        Ok(())
    })
    .expect("a well-formed #[prost] attribute");
    let rust = f
        .ident
        .as_ref()?
        .to_string()
        .trim_start_matches("r#")
        .to_string();
    let message_type = || Ty::Message(resolve(module, leaf(&f.ty)));
    let ty = if let Some(map) = map {
        let (_, value) = map
            .split_once(',')
            .expect("a map names key and value types");
        let value = value.trim();
        Ty::Map(Box::new(match scalar(value) {
            Some(t) => Ty::Scalar(t),
            None => message_type(),
        }))
    } else {
        let kind = kind.expect("a field has a type");
        match scalar(&kind) {
            Some(t) => Ty::Scalar(t),
            None => message_type(),
        }
    };
    Some(Field {
        rust,
        number,
        repeated,
        ty,
    })
}

/// The innermost type path: `Option<Box<T>>`, `Vec<T>` and `BTreeMap<K, T>` give `T`.
fn leaf(ty: &syn::Type) -> &syn::Path {
    let syn::Type::Path(p) = ty else {
        panic!("k8s-pb field types are paths")
    };
    let last = p.path.segments.last().expect("a path has segments");
    if let syn::PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(syn::GenericArgument::Type(inner)) = args.args.last()
    {
        return leaf(inner);
    }
    &p.path
}

/// The full name of a type path used in `module` (`super::super::X::Y` climbs two modules).
fn resolve(module: &[String], path: &syn::Path) -> String {
    let mut base = module.to_vec();
    let mut rest = Vec::new();
    for seg in &path.segments {
        let s = seg.ident.to_string();
        if s == "super" {
            base.pop();
        } else {
            rest.push(s);
        }
    }
    base.extend(rest);
    format!("k8s.io.{}", base.join("."))
}

/// The OpenAPI definition a message corresponds to, if the served kinds reach it.
fn definition<'a>(s: &'a Schemas, msg: &Msg) -> Option<(&'a String, &'a Value)> {
    let package = msg
        .package
        .strip_prefix("k8s.io.")?
        .replace("apiextensions_apiserver", "apiextensions-apiserver");
    let prefix = format!("io.k8s.{package}.");
    s.definitions.iter().find(|(name, _)| {
        name.strip_prefix(&prefix)
            .is_some_and(|n| n.eq_ignore_ascii_case(&msg.name))
    })
}

/// Letters and digits only, lower-cased: `host_ipc` and `hostIPC`, `ref` and `$ref` meet here.
fn normalized(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// `host_ipc` → `hostIpc`: the field's name in the descriptor, and its JSON name where the
/// schema has none.
fn camel(name: &str) -> String {
    let mut out = String::new();
    for (i, part) in name.split('_').enumerate() {
        let mut cs = part.chars();
        match cs.next() {
            Some(first) if i > 0 => {
                out.push(first.to_ascii_uppercase());
                out.extend(cs);
            }
            _ => out.push_str(part),
        }
    }
    out
}

fn upper_first(s: &str) -> String {
    let mut cs = s.chars();
    cs.next()
        .map(|c| c.to_ascii_uppercase().to_string() + cs.as_str())
        .unwrap_or_default()
}

/// Whether a field the schema does not name holds a message whose fields the schema lists
/// instead: Go's `json:",inline"` (`IngressRule.ingressRuleValue`, `Volume.volumeSource`,
/// `Probe.handler`). Such a field gets the empty JSON name, as its Go tag has.
fn inlined(all: &BTreeMap<String, Msg>, ty: &Ty, props: &serde_json::Map<String, Value>) -> bool {
    let Ty::Message(m) = ty else { return false };
    let fields = &all[m].fields;
    !fields.is_empty()
        && fields
            .iter()
            .all(|f| props.keys().any(|k| normalized(k) == normalized(&f.rust)))
}

/// The messages reachable from the roots, by full name.
fn reachable(all: &BTreeMap<String, Msg>, roots: Vec<String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = roots;
    while let Some(name) = todo.pop() {
        let Some(msg) = all.get(&name) else {
            panic!("{name} is not a k8s-pb message")
        };
        if !seen.insert(name) {
            continue;
        }
        for f in &msg.fields {
            match &f.ty {
                Ty::Message(m) => todo.push(m.clone()),
                Ty::Map(v) => {
                    if let Ty::Message(m) = v.as_ref() {
                        todo.push(m.clone());
                    }
                }
                Ty::Scalar(_) => {}
            }
        }
    }
    seen
}

fn label(repeated: bool) -> Label {
    if repeated {
        Label::Repeated
    } else {
        Label::Optional
    }
}

/// The descriptor set of every message the served kinds reach, one file per package.
fn generate() -> FileDescriptorSet {
    let s = schemas();
    let all = messages(&k8s_pb_src());
    let mut roots: Vec<String> = EXTRA_ROOTS.iter().map(|r| r.to_string()).collect();
    for (full, msg) in &all {
        if definition(s, msg).is_some_and(|(d, _)| s.kinds.iter().any(|k| &k.definition == d)) {
            roots.push(full.clone());
        }
    }
    let kept = reachable(&all, roots);
    // The API's spelling of each kept message (`JSONSchemaProps`, not prost's `JsonSchemaProps`).
    let api_name = |full: &str| -> String {
        let msg = &all[full];
        let name = definition(s, msg)
            .and_then(|(d, _)| d.rsplit('.').next())
            .unwrap_or(&msg.name);
        format!(".{}.{name}", msg.package)
    };
    let mut files: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for full in &kept {
        let msg = &all[full];
        let props = definition(s, msg)
            .map(|(_, d)| s.resolve(d))
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object);
        let mut out = DescriptorProto {
            name: Some(
                api_name(full)
                    .rsplit('.')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            ),
            ..Default::default()
        };
        for f in &msg.fields {
            let name = camel(&f.rust);
            let json_name = props
                .and_then(|p| p.keys().find(|k| normalized(k) == normalized(&f.rust)))
                .cloned()
                .unwrap_or_else(|| {
                    if props.is_some_and(|p| inlined(&all, &f.ty, p)) {
                        String::new()
                    } else {
                        name.clone()
                    }
                });
            let mut fd = FieldDescriptorProto {
                name: Some(name.clone()),
                number: Some(f.number),
                label: Some(label(f.repeated) as i32),
                json_name: Some(json_name),
                ..Default::default()
            };
            let mut uses = |ty: &Ty, fd: &mut FieldDescriptorProto| match ty {
                Ty::Scalar(t) => fd.r#type = Some(*t as i32),
                Ty::Message(m) => {
                    fd.r#type = Some(Type::Message as i32);
                    fd.type_name = Some(api_name(m));
                    imports
                        .entry(msg.package.clone())
                        .or_default()
                        .insert(all[m].package.clone());
                }
                Ty::Map(_) => unreachable!("maps hold scalars or messages"),
            };
            match &f.ty {
                Ty::Map(value) => {
                    let entry = format!("{}Entry", upper_first(&name));
                    let mut key = FieldDescriptorProto {
                        name: Some("key".into()),
                        number: Some(1),
                        label: Some(Label::Optional as i32),
                        r#type: Some(Type::String as i32),
                        json_name: Some("key".into()),
                        ..Default::default()
                    };
                    let mut val = FieldDescriptorProto {
                        name: Some("value".into()),
                        number: Some(2),
                        label: Some(Label::Optional as i32),
                        json_name: Some("value".into()),
                        ..Default::default()
                    };
                    uses(value, &mut val);
                    key.r#type = Some(Type::String as i32);
                    out.nested_type.push(DescriptorProto {
                        name: Some(entry.clone()),
                        field: vec![key, val],
                        options: Some(MessageOptions {
                            map_entry: Some(true),
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                    fd.label = Some(Label::Repeated as i32);
                    fd.r#type = Some(Type::Message as i32);
                    fd.type_name = Some(format!("{}.{entry}", api_name(full)));
                }
                ty => uses(ty, &mut fd),
            }
            out.field.push(fd);
        }
        files
            .entry(msg.package.clone())
            .or_insert_with(|| FileDescriptorProto {
                name: Some(format!("{}/generated.proto", msg.package.replace('.', "/"))),
                package: Some(msg.package.clone()),
                syntax: Some("proto2".into()),
                ..Default::default()
            })
            .message_type
            .push(out);
    }
    for (package, file) in &mut files {
        file.dependency = imports
            .get(package)
            .into_iter()
            .flatten()
            .filter(|p| *p != package)
            .map(|p| format!("{}/generated.proto", p.replace('.', "/")))
            .collect();
    }
    FileDescriptorSet {
        file: files.into_values().collect(),
    }
}

#[test]
fn the_descriptor_set_is_generated_from_the_pinned_k8s_pb() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/wire/protobuf/k8s.binpb");
    let fresh = generate().encode_to_vec();
    if std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("k8s.binpb is writable");
    }
    let kept = std::fs::read(&path).unwrap_or_default();
    assert!(
        kept == fresh,
        "{} is stale or missing; regenerate it with\n    {REGENERATE}",
        path.display()
    );
    prost_reflect::DescriptorPool::decode(fresh.as_slice()).expect("the descriptors are valid");
}
