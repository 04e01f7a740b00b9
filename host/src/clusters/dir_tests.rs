use super::*;

fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {{cluster: c, user: c}}\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\nusers:\n- name: c\n  user: {{token: t}}\n"
    )
}

fn names(engage: &[super::super::seen::Found]) -> Vec<&str> {
    engage.iter().map(|f| f.name.as_str()).collect()
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_file_that_appears_engages_its_cluster_named_by_the_stem_once() {
    let d = dir();
    write(d.path(), "member-a.yaml", &kubeconfig("https://a:6443"));
    write(
        d.path(),
        ".member-b.yaml.tmp",
        &kubeconfig("https://b:6443"),
    );
    let mut state = DirState::new(d.path());
    let changes = state.scan();
    assert_eq!(names(&changes.engage), ["member-a"]);
    assert!(changes.release.is_empty() && changes.refused.is_empty());
    let again = state.scan();
    assert!(
        again.engage.is_empty(),
        "an unchanged file is not engaged twice"
    );
}

#[test]
fn a_removed_file_releases_its_cluster_and_a_changed_one_is_engaged_again() {
    let d = dir();
    write(d.path(), "member-a.yaml", &kubeconfig("https://a:6443"));
    write(d.path(), "member-b", &kubeconfig("https://b:6443"));
    let mut state = DirState::new(d.path());
    assert_eq!(names(&state.scan().engage), ["member-a", "member-b"]);
    std::fs::remove_file(d.path().join("member-a.yaml")).unwrap_or_else(|e| panic!("{e}"));
    write(d.path(), "member-b", &kubeconfig("https://b2:6443"));
    let changes = state.scan();
    assert_eq!(changes.release, ["member-a"]);
    assert_eq!(names(&changes.engage), ["member-b"]);
}

#[test]
fn a_malformed_file_is_refused_by_name_and_the_others_are_unaffected() {
    let d = dir();
    write(d.path(), "member-a.yaml", &kubeconfig("https://a:6443"));
    write(d.path(), "broken.yaml", "clusters: [ this is not");
    let mut state = DirState::new(d.path());
    let changes = state.scan();
    assert_eq!(names(&changes.engage), ["member-a"]);
    let refused: Vec<String> = changes.refused.iter().map(ToString::to_string).collect();
    assert_eq!(refused.len(), 1);
    assert!(refused[0].contains("broken.yaml"), "{refused:?}");
    assert!(
        state.scan().refused.is_empty(),
        "said once until it changes"
    );
    std::fs::remove_file(d.path().join("broken.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        state.scan().release.is_empty(),
        "a refused file that goes releases nothing"
    );
}

#[test]
fn an_engaged_cluster_whose_file_turns_bad_stays_until_the_file_goes() {
    let d = dir();
    write(d.path(), "member-a.yaml", &kubeconfig("https://a:6443"));
    let mut state = DirState::new(d.path());
    assert_eq!(names(&state.scan().engage), ["member-a"]);
    write(
        d.path(),
        "member-a.yaml",
        "users: [{name: u, user: {exec: {command: x}}}]",
    );
    let changes = state.scan();
    assert!(changes.engage.is_empty() && changes.release.is_empty());
    assert_eq!(changes.refused.len(), 1);
    std::fs::remove_file(d.path().join("member-a.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state.scan().release, ["member-a"]);
}
