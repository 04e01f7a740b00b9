//! Temporary: old vs new SDK JSON steps, interleaved in one run.
use std::hint::black_box;
use std::time::Instant;
use k8s_openapi::api::apps::v1::Deployment;
use serde_json::Value;
use weir_plugin_blog::Blog;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/07-deployment-ready.yaml");
    let case: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let parent = case["parent"].to_string();
    let dep_v = case["observed"][1].clone();
    let dep: Deployment = serde_json::from_value(dep_v.clone()).unwrap();
    let n = 20000;
    let mut t = [0u128; 6];
    for _ in 0..10 {
        let s = Instant::now(); for _ in 0..n { let v: Value = serde_json::from_str(black_box(&parent)).unwrap(); let b: Blog = serde_path_to_error::deserialize(&v).unwrap(); black_box(b); } t[0] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { let b: Blog = serde_json::from_str(black_box(&parent)).unwrap(); black_box(b); } t[1] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { let d: Deployment = serde_path_to_error::deserialize(black_box(&dep_v)).unwrap(); black_box(d); } t[2] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { let d: Deployment = serde::Deserialize::deserialize(black_box(&dep_v)).unwrap(); black_box(d); } t[3] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { black_box(serde_json::to_value(black_box(&dep)).unwrap().to_string()); } t[4] += s.elapsed().as_nanos();
        let s = Instant::now(); for _ in 0..n { black_box(serde_json::to_string(black_box(&dep)).unwrap()); } t[5] += s.elapsed().as_nanos();
    }
    let us = |x: u128| x as f64 / (10.0 * n as f64) / 1000.0;
    println!("| step | old µs | new µs | old/new |");
    for (name, o, nw) in [("parent decode", t[0], t[1]), ("Deployment decode", t[2], t[3]), ("Deployment encode", t[4], t[5])] {
        println!("| {name} | {:.2} | {:.2} | {:.2} |", us(o), us(nw), o as f64 / nw as f64);
    }
}
