//! The cache's accounting: the bytes a store reports (`weir_cached_bytes`) are what the
//! allocator says it holds. Its own test binary, so the counting allocator sees this test alone.

use kube::runtime::watcher;
use weir::plugin::ResourceKind;
use weir::runtime::cache::{CachedObject, Incoming, Store};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn config_maps() -> ResourceKind {
    ResourceKind {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

/// A ConfigMap of a Blog as the API server serves it: labels, a controller, managedFields and
/// `data` of `size` bytes, the same letter repeated or, if `noisy`, letters that differ from
/// object to object (which packing cannot shrink).
fn served(blog: usize, child: usize, size: usize, noisy: bool) -> String {
    let mut seed = (blog * 3 + child) as u64;
    let data: String = (0..size)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if noisy {
                char::from(b'a' + (seed >> 60) as u8)
            } else {
                'x'
            }
        })
        .collect();
    serde_json::json!({
        "apiVersion": "v1",
        "data": {"index.html": data},
        "kind": "ConfigMap",
        "metadata": {
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app.kubernetes.io/managed-by": "weir", "app.kubernetes.io/name": format!("blog-{blog}")},
            "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:index.html": {}}}, "manager": "weir", "operation": "Apply"}],
            "name": format!("blog-{blog}-{child}"),
            "namespace": "default",
            "ownerReferences": [{"apiVersion": "weir.dev/v1alpha1", "blockOwnerDeletion": true, "controller": true, "kind": "Blog", "name": format!("blog-{blog}"), "uid": format!("00000000-0000-0000-0000-{blog:012}")}],
            "resourceVersion": format!("{}", blog * 3 + child),
            "uid": format!("10000000-0000-0000-0000-{:012}", blog * 3 + child)
        }
    })
    .to_string()
}

/// The heap bytes held after filling a store with `blogs` Blogs' three children of `size`
/// bytes of data each (then listing them all again if `relist`), and the bytes the store reports.
fn held_and_reported(blogs: usize, size: usize, noisy: bool, relist: bool) -> (usize, usize) {
    let texts: Vec<String> = (0..blogs)
        .flat_map(|b| (0..3).map(move |c| served(b, c, size, noisy)))
        .collect();
    let before = dhat::HeapStats::get().curr_bytes;
    let store = Store::new(config_maps());
    let packing = store.packing().clone();
    for text in &texts {
        let incoming: Incoming = serde_json::from_str(text).expect("a served ConfigMap decodes");
        store.apply(watcher::Event::Apply(CachedObject::new(incoming, &packing)));
    }
    if relist {
        // The watch restarts: the same objects listed again replace the ones cached.
        store.apply(watcher::Event::Init);
        for text in &texts {
            let incoming: Incoming =
                serde_json::from_str(text).expect("a served ConfigMap decodes");
            store.apply(watcher::Event::InitApply(CachedObject::new(
                incoming, &packing,
            )));
        }
        store.apply(watcher::Event::InitDone);
    }
    let held = dhat::HeapStats::get().curr_bytes - before;
    let reported = store.bytes();
    drop(store);
    (held, reported)
}

#[test]
fn the_bytes_a_store_reports_are_within_a_tenth_of_the_heap_it_holds() {
    let _profiler = dhat::Profiler::builder().testing().build();
    for (blogs, size, noisy, relist) in [
        (1_000, 100, false, false),
        (1_000, 2_000, false, false),
        (1_000, 2_000, true, false),
        (3_000, 500, false, false),
        (1_000, 500, true, true),
    ] {
        let (held, reported) = held_and_reported(blogs, size, noisy, relist);
        let off = reported.abs_diff(held) as f64 / held as f64;
        eprintln!(
            "{blogs} Blogs x 3 children, {size} B of data (noisy: {noisy}), relisted: {relist}: reported {reported} B, held {held} B"
        );
        assert!(
            off <= 0.10,
            "{blogs} Blogs' children with {size} bytes of data: the store reports {reported} bytes, the heap holds {held} ({:.1}% apart)",
            off * 100.0
        );
    }
}
