use super::*;

fn config_maps() -> Arc<Packing> {
    Arc::new(Packing::learning(TypeMeta {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
    }))
}

fn packed(text: &str, packing: &Arc<Packing>) -> CachedObject {
    let incoming: Incoming = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    CachedObject::new(incoming, packing)
}

fn cached(text: &str) -> CachedObject {
    packed(text, &config_maps())
}

/// A Blog's ConfigMap as served, less managedFields (fields in the order the cache keeps).
fn page(i: usize) -> String {
    let (minute, second, uid) = (i / 60 % 60, i % 60, i * 31);
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"creationTimestamp":"2026-12-05T01:{minute:02}:{second:02}Z","labels":{{"app.kubernetes.io/managed-by":"weir","app.kubernetes.io/name":"blog-{i}"}},"name":"blog-{i}-page","namespace":"default","ownerReferences":[{{"apiVersion":"weir.dev/v1alpha1","blockOwnerDeletion":true,"controller":true,"kind":"Blog","name":"blog-{i}","uid":"5f0c2a4e-0000-4000-8000-{i:012}"}}],"resourceVersion":"{rv}","uid":"9b1d7e3a-{i:04}-4000-8000-{uid:012}"}},"data":{{"index.html":"<html><head><title>Blog {i}</title></head><body><h1>Blog {i}</h1></body></html>"}}}}"#,
        rv = 1000 + 7 * i
    )
}

#[test]
fn objects_of_one_kind_come_back_byte_for_byte_and_packed_small_against_the_first() {
    let packing = config_maps();
    let objects: Vec<(String, CachedObject)> = (0..50)
        .map(|i| {
            let text = page(i);
            let obj = packed(&text, &packing);
            (text, obj)
        })
        .collect();
    for (text, obj) in &objects {
        assert_eq!(&obj.json(), text);
    }
    assert_eq!(packing.dictionary_bytes(), objects[0].0.len());
    let (text, obj) = &objects[49];
    assert!(
        obj.packed.len() * 3 < text.len(),
        "a ConfigMap of {} bytes packed into {}",
        text.len(),
        obj.packed.len()
    );
}

#[test]
fn an_object_on_its_own_or_of_other_types_is_packed_without_the_kinds_dictionary() {
    let packing = config_maps();
    let first = packed(&page(0), &packing);
    let secret = page(1).replace(r#""kind":"ConfigMap""#, r#""kind":"Secret""#);
    let other = packed(&secret, &packing);
    assert_eq!(other.types().kind, "Secret");
    assert_eq!(other.json(), secret);
    assert_eq!(first.json(), page(0));
    let decoded: DynamicObject = serde_json::from_str(&page(2)).unwrap_or_else(|e| panic!("{e}"));
    let alone = CachedObject::from_object(&decoded).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(alone.packing.dictionary_bytes(), 0);
    assert_eq!(
        alone.decode().ok().map(|d| d.metadata.name),
        Some(decoded.metadata.name)
    );
}

#[test]
fn the_header_is_read_from_the_metadata() {
    let obj = cached(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"deletionTimestamp":"2024-01-01T00:00:00Z","generation":3,"labels":{"b":"2","a":"1"},"name":"c","namespace":"ns","ownerReferences":[{"apiVersion":"weir.dev/v1alpha1","kind":"Blog","name":"x","uid":"u0"},{"apiVersion":"weir.dev/v1alpha1","controller":true,"kind":"Blog","name":"b","uid":"u1"}],"resourceVersion":"7","uid":"u2"}}"#,
    );
    assert_eq!(obj.key(), ObjectKey::new("ns", "c"));
    assert_eq!(obj.uid(), Some("u2"));
    assert_eq!(obj.resource_version(), Some("7"));
    assert_eq!(obj.generation(), Some(3));
    assert_eq!(obj.label("a"), Some("1"));
    assert_eq!(obj.label("b"), Some("2"));
    assert_eq!(obj.label("c"), None);
    let controller = obj.controller().unwrap_or_else(|| panic!("a controller"));
    assert_eq!((controller.name, controller.uid), ("b", "u1"));
    assert_eq!(obj.controller_uid(), Some("u1"));
    assert!(obj.is_deleting());
}

#[test]
fn a_header_string_the_json_holds_escaped_is_read_unescaped_and_the_json_kept_as_it_came() {
    let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"a\"q":"x\\y","b":"é"},"name":"c","namespace":"ns","ownerReferences":[{"apiVersion":"v1","controller":true,"kind":"K\"","name":"o","uid":"u\n1"}]}}"#;
    let obj = cached(text);
    assert_eq!(obj.json(), text);
    assert_eq!(obj.label("a\"q"), Some("x\\y"));
    assert_eq!(obj.label("b"), Some("\u{e9}"));
    assert_eq!(
        obj.labels().collect::<Vec<_>>(),
        [("a\"q", "x\\y"), ("b", "\u{e9}")]
    );
    let controller = obj.controller().unwrap_or_else(|| panic!("a controller"));
    assert_eq!(
        (controller.kind, controller.name, controller.uid),
        ("K\"", "o", "u\n1")
    );
    assert_eq!(obj.name(), "c");
    assert_eq!(obj.namespace(), Some("ns"));
}

#[test]
fn the_header_of_an_object_without_metadata_is_empty() {
    let obj = cached(r#"{"data":{}}"#);
    assert_eq!(
        obj.key(),
        ObjectKey {
            namespace: None,
            name: String::new()
        }
    );
    assert_eq!(obj.uid(), None);
    assert_eq!(obj.labels().len(), 0);
    assert!(obj.controller().is_none());
}

#[test]
fn a_list_item_without_types_gets_its_kinds_types_in_front() {
    let obj = cached(r#"{"data":{"k":"v"},"metadata":{"name":"c"}}"#);
    assert_eq!(
        obj.json(),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}"#
    );
    assert_eq!(obj.types().kind, "ConfigMap");
    let decoded = obj.decode().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decoded.metadata.name.as_deref(), Some("c"));
}

#[test]
fn a_metadata_field_of_the_wrong_type_is_refused_as_it_was_by_the_decoded_form() {
    let text = r#"{"metadata":{"name":"c","labels":{"a":1}}}"#;
    assert!(serde_json::from_str::<Incoming>(text).is_err());
    assert!(serde_json::from_str::<DynamicObject>(text).is_err());
}
