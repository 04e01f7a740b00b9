use super::*;

fn env(pairs: &[(&str, Option<&str>)]) -> Env {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.map(String::from)))
        .collect()
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn kubernetes_expansion_replaces_defined_names_and_keeps_escapes() {
    let e = env(&[("NAME", Some("world")), ("SECRET", None)]);
    assert_eq!(expand("hello $(NAME)", &e).as_deref(), Some("hello world"));
    assert_eq!(
        expand("$$(NAME) costs $5", &e).as_deref(),
        Some("$(NAME) costs $5")
    );
    assert_eq!(expand("open $(NAME", &e).as_deref(), Some("open $(NAME"));
    assert_eq!(expand("trailing $", &e).as_deref(), Some("trailing $"));
    assert_eq!(
        expand("$(SECRET)", &e),
        None,
        "a value the simulation cannot read"
    );
    assert_eq!(
        expand("$(UNDEFINED)", &e),
        None,
        "possibly a Service variable"
    );
}

#[test]
fn echo_run_directly_prints_its_arguments_backslashes_and_all() {
    let e = Env::new();
    assert_eq!(
        output(&argv(&["echo", "hello", "a\\tb"]), &e).as_deref(),
        Some("hello a\\tb\n")
    );
    assert_eq!(
        output(&argv(&["/bin/echo", "-n", "x"]), &e).as_deref(),
        Some("x")
    );
    assert_eq!(output(&argv(&["echo"]), &e).as_deref(), Some("\n"));
    assert_eq!(output(&argv(&["echo", "-e", "x"]), &e), None);
    assert_eq!(output(&argv(&["echo", "-n", "-n", "x"]), &e), None);
    assert_eq!(output(&argv(&["echo", "-x"]), &e).as_deref(), Some("-x\n"));
    assert_eq!(output(&argv(&["printf", "x"]), &e), None);
}

#[test]
fn a_shell_script_of_echo_commands_prints_what_they_print() {
    let e = env(&[("NAME", Some("Ada  Lovelace")), ("EMPTY", Some(""))]);
    let sh = |s: &str| output(&argv(&["sh", "-c", s]), &e);
    assert_eq!(
        sh("echo \"hello $NAME\"").as_deref(),
        Some("hello Ada  Lovelace\n")
    );
    assert_eq!(
        sh("echo hello $NAME").as_deref(),
        Some("hello Ada Lovelace\n")
    );
    assert_eq!(
        sh("echo ${NAME}!").as_deref(),
        None,
        "`!` is refused unquoted"
    );
    assert_eq!(sh("echo \"${NAME}!\"").as_deref(), Some("Ada  Lovelace!\n"));
    assert_eq!(sh("echo 'single $NAME'").as_deref(), Some("single $NAME\n"));
    assert_eq!(sh("echo a $EMPTY b \"$EMPTY\"").as_deref(), Some("a b \n"));
    assert_eq!(
        sh("echo one; echo two && echo three\necho -n four").as_deref(),
        Some("one\ntwo\nthree\nfour")
    );
    assert_eq!(sh("  echo   spaced   ").as_deref(), Some("spaced\n"));
}

#[test]
fn a_script_that_does_anything_but_echo_is_not_evaluated() {
    let e = env(&[("NAME", Some("x")), ("GLOB", Some("*")), ("HIDDEN", None)]);
    for script in [
        "echo hi | tee out",
        "echo hi > /tmp/x",
        "echo $(date)",
        "echo `date`",
        "echo *",
        "echo $GLOB",
        "echo $HIDDEN",
        "echo $UNDEFINED",
        "echo \"a\\nb\"",
        "echo ${NAME:-y}",
        "echo $1",
        "sleep 1; echo done",
        "X=1 echo hi",
        "echo 'unterminated",
        "echo hi &",
        "echo hi || true",
        "echo {a,b}",
        "echo ~",
    ] {
        assert_eq!(output(&argv(&["sh", "-c", script]), &e), None, "{script}");
    }
    assert_eq!(output(&argv(&["sh", "-x", "-c", "echo hi"]), &e), None);
    assert_eq!(output(&argv(&["sh", "-c"]), &e), None);
    assert_eq!(output(&argv(&["python", "-c", "print(1)"]), &e), None);
}
