//! Temporary: where the native reconcile time goes, interleaved in one run.
use std::hint::black_box;
use std::time::Instant;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::Value;
use weir_guest_sdk::{Child, testing};
use weir_plugin_blog::{Blog, BlogReconciler};

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/07-deployment-ready.yaml");
    let case: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let parent = case["parent"].clone();
    let observed: Vec<Value> = case["observed"].as_array().unwrap().clone();
    let strings: Vec<String> = observed.iter().map(|v| v.to_string()).collect();
    let blog: Blog = serde_json::from_value(parent.clone()).unwrap();
    let n = 5000;
    let mut t = [0u128; 6];
    for _ in 0..10 {
        let s = Instant::now(); for _ in 0..n { black_box(testing::reconcile::<BlogReconciler>(&parent, observed.iter().cloned().map(Child::json).collect()).unwrap()); } t[0] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { black_box(observed.iter().cloned().map(Child::json).collect::<Vec<_>>()); } t[1] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { let v: Vec<Value> = strings.iter().map(|s| serde_json::from_str(s).unwrap()).collect(); black_box(v); } t[2] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { let d: Deployment = serde::Deserialize::deserialize(&observed[1]).unwrap(); black_box(d); } t[3] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { black_box(weir_plugin_blog::page_hash(&weir_plugin_blog::page(black_box(&blog.spec.title)))); } t[4] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { let b: Blog = serde_json::from_str(&parent.to_string()).unwrap(); black_box(b); } t[5] += s.elapsed().as_nanos();
    }
    let us = |x: u128| x as f64 / (10.0 * n as f64) / 1000.0;
    for (name, x) in [("full testing::reconcile", t[0]), ("observed Value->Child strings", t[1]), ("parse 3 children to Value", t[2]), ("Deployment decode", t[3]), ("page + hash", t[4]), ("parent to_string+decode", t[5])] {
        println!("| {name} | {:.2} |", us(x));
    }
}
