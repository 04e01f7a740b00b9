//! Fault rules: which requests they pick, how often they fire, how they are read from YAML.

use super::*;

#[test]
fn requests_are_classified_by_verb_and_resource() {
    let get = http::Method::GET;
    let c = |m: &http::Method, p: &str, q: &str| classify(m, p, q);
    assert_eq!(
        c(&get, "/api/v1/namespaces/ns/configmaps", "watch=true"),
        Some((Verb::Watch, "configmaps".into(), None))
    );
    assert_eq!(
        c(&get, "/apis/weir.dev/v1alpha1/namespaces/ns/blogs/b", ""),
        Some((Verb::Get, "blogs".into(), None))
    );
    assert_eq!(
        c(
            &http::Method::PATCH,
            "/apis/weir.dev/v1alpha1/namespaces/ns/blogs/b/status",
            ""
        ),
        Some((Verb::Patch, "blogs".into(), Some("status".into())))
    );
    assert_eq!(
        c(&get, "/api/v1/namespaces", ""),
        Some((Verb::List, "namespaces".into(), None))
    );
    assert_eq!(c(&get, "/apis", ""), None);
}

#[test]
fn a_rule_with_a_count_fires_that_many_times_only() {
    let mut rule = Rule::new(
        &[Verb::Create],
        Some("configmaps"),
        Fault::Status { code: 503 },
    );
    rule.times = Some(2);
    let faults = Faults::new(vec![rule]);
    let fired = (0..5)
        .filter(|_| faults.pick(Verb::Create, "configmaps", None, "").is_some())
        .count();
    assert_eq!(fired, 2);
    assert_eq!(faults.pick(Verb::List, "configmaps", None, ""), None);
    assert_eq!(faults.injected().get("status"), Some(&2));
}

#[test]
fn a_probability_fires_about_that_share_of_requests() {
    let faults = Faults::seeded(
        vec![Rule::new(&[], None, Fault::Status { code: 500 }).probability(0.3)],
        7,
    );
    let fired = (0..1000)
        .filter(|_| faults.pick(Verb::Get, "pods", None, "").is_some())
        .count();
    assert!((220..380).contains(&fired), "{fired} of 1000");
}

#[test]
fn watch_only_faults_leave_other_verbs_alone() {
    let faults = Faults::new(vec![Rule::new(
        &[],
        None,
        Fault::CloseWatch { after_millis: 10 },
    )]);
    assert_eq!(faults.pick(Verb::List, "blogs", None, ""), None);
    assert!(faults.pick(Verb::Watch, "blogs", None, "").is_some());
}

#[test]
fn rules_are_read_from_yaml() {
    let rules = Faults::from_yaml(
        "- verbs: [update, patch]\n  resource: configmaps\n  probability: 0.3\n  fault: {kind: status, code: 409}\n\
         - fault: {kind: tooManyRequests, retryAfterSecs: 1}\n- fault: {kind: reset}\n",
    );
    let rules = rules.map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)));
    assert_eq!(rules.as_ref().map(Vec::len), Ok(3), "{rules:?}");
    assert!(Faults::from_yaml("- fault: {kind: reset}\n  probability: 2\n").is_err());
}

#[test]
fn a_rule_that_does_not_read_is_reported_with_its_line_and_column() {
    let err = Faults::from_yaml(
        "- fault: {kind: reset}\n- verbs: [frobnicate]\n  fault: {kind: reset}\n",
    )
    .unwrap_err();
    let parser = std::error::Error::source(&err).map(ToString::to_string);
    let parser = parser.unwrap_or_default();
    assert!(parser.contains("frobnicate"), "{parser}");
    assert!(parser.contains("line 2"), "{parser}");
    assert!(parser.contains("column"), "{parser}");
}
