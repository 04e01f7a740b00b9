//! The built-in kinds' unknown fields found and dropped, over their schemas compiled once into tables of fields.
//!
//! [`builtin_schema`](crate::wire::builtin_schema) keeps the OpenAPI document as JSON, its
//! definitions named by `$ref`. Walking an object against it looked up every field's schema in
//! that document and followed each `$ref` by its long name: on every write. Here each schema an
//! object can meet is compiled once into a [`Node`] (the `$ref`s and single-element `allOf`s
//! followed at compile time), and a write looks each field up once, by hash.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::wire::builtin_schema::{Schemas, schemas};

/// One schema as pruning reads it.
#[derive(Debug, Default)]
struct Node {
    /// `properties`: the declared fields of an object, each with its schema.
    fields: Option<HashMap<Box<str>, usize>>,
    /// `additionalProperties` (an object schema): the schema of every value of a map.
    values: Option<usize>,
    /// `items`: the schema of every item of a list.
    items: Option<usize>,
}

/// The compiled schemas of the served built-in kinds.
#[derive(Debug)]
pub struct Pruner {
    nodes: Vec<Node>,
    /// The root node of each served kind, by group and kind.
    roots: HashMap<(&'static str, &'static str), usize>,
}

/// The schemas compiled, on first use.
pub fn pruner() -> &'static Pruner {
    static PRUNER: OnceLock<Pruner> = OnceLock::new();
    PRUNER.get_or_init(|| Pruner::compile(schemas()))
}

impl Pruner {
    fn compile(schemas: &Schemas) -> Pruner {
        let mut compiler = Compiler {
            schemas,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        let roots = schemas
            .kinds
            .iter()
            .filter_map(|k| {
                let root = schemas.definitions.get(&k.definition)?;
                Some(((k.group, k.kind), compiler.node(root)))
            })
            .collect();
        Pruner {
            nodes: compiler.nodes,
            roots,
        }
    }

    /// Paths of fields `obj` (of the built-in `kind` in `group`) has that its schema does not
    /// declare (`spec.replica`, `spec.template.spec.containers[0].imagee`), removed from `obj`
    /// as the API server drops them; `None` when the kind is not a served built-in one.
    pub fn prune_unknown(&self, group: &str, kind: &str, obj: &mut Value) -> Option<Vec<String>> {
        let root = *self.roots.get(&(group, kind))?;
        let mut unknown = Vec::new();
        self.prune_at(root, obj, &Where::Root, &mut unknown);
        Some(unknown)
    }

    fn prune_at(&self, node: usize, v: &mut Value, at: &Where<'_>, unknown: &mut Vec<String>) {
        let node = &self.nodes[node];
        match v {
            Value::Object(map) => {
                if let Some(fields) = &node.fields {
                    let mut dropped = Vec::new();
                    for (k, child) in map.iter_mut() {
                        let here = Where::Property(at, k);
                        match fields.get(k.as_str()) {
                            Some(sub) => self.prune_at(*sub, child, &here, unknown),
                            None => {
                                dropped.push(k.clone());
                                unknown.push(here.render());
                            }
                        }
                    }
                    for k in dropped {
                        map.remove(&k);
                    }
                } else if let Some(values) = node.values {
                    for (k, child) in map.iter_mut() {
                        self.prune_at(values, child, &Where::Entry(at, k), unknown);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = node.items {
                    for (i, child) in items.iter_mut().enumerate() {
                        self.prune_at(item, child, &Where::Item(at, i), unknown);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Compiles schemas into nodes, each distinct schema (after `$ref`s) once.
struct Compiler<'a> {
    schemas: &'a Schemas,
    nodes: Vec<Node>,
    /// The node of each schema compiled or being compiled, by its place in the document (so a
    /// schema that refers to itself, directly or not, ends).
    seen: HashMap<*const Value, usize>,
}

impl<'a> Compiler<'a> {
    fn node(&mut self, schema: &'a Value) -> usize {
        let schema = self.schemas.resolve(schema);
        if let Some(id) = self.seen.get(&std::ptr::from_ref(schema)) {
            return *id;
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.seen.insert(std::ptr::from_ref(schema), id);
        // A schema that keeps unknown fields is one with nothing to prune under it.
        if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            return id;
        }
        let fields = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(k, sub)| (k.as_str().into(), self.node(sub)))
                    .collect()
            });
        let values = schema
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .map(|a| self.node(a));
        let items = schema.get("items").map(|i| self.node(i));
        self.nodes[id] = Node {
            fields,
            values,
            items,
        };
        id
    }
}

/// Where [`Pruner::prune_unknown`] is in the object, written out only for a field it drops.
enum Where<'a> {
    Root,
    /// A declared property (`spec.replicas`; no dot at the root).
    Property(&'a Where<'a>, &'a str),
    /// A map value (`.data.key`).
    Entry(&'a Where<'a>, &'a str),
    /// A list item (`[0]`).
    Item(&'a Where<'a>, usize),
}

impl Where<'_> {
    fn render(&self) -> String {
        match self {
            Where::Root => String::new(),
            Where::Property(parent, k) => {
                let parent = parent.render();
                if parent.is_empty() {
                    (*k).to_string()
                } else {
                    format!("{parent}.{k}")
                }
            }
            Where::Entry(parent, k) => format!("{}.{k}", parent.render()),
            Where::Item(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

#[cfg(test)]
#[path = "builtin_prune_tests.rs"]
mod tests;
