//! What a container whose command is a literal `echo` prints, found without running anything.
//!
//! The simulation runs no process. When a container's command (with its args) is one whose
//! output follows from its text and the container's environment alone, that output can be
//! told honestly: `echo` run directly (`["echo", "a", "$(NAME)"]`), or a shell given a script
//! of nothing but `echo` commands (`["sh", "-c", "echo \"hello $NAME\""]`). Anything else —
//! another program, a pipe, a redirection, a glob, a command substitution, a backslash (whose
//! meaning differs between shells' `echo`s), an option other than one leading `-n`, a variable
//! the container's spec does not define — is not evaluated, and [`output`] says `None`.

use std::collections::BTreeMap;

/// A container's environment as far as its spec says: each variable's value, `None` when the
/// variable is set from a source the simulation cannot read.
pub type Env = BTreeMap<String, Option<String>>;

/// The programs accepted as `echo`.
const ECHO: [&str; 3] = ["echo", "/bin/echo", "/usr/bin/echo"];

/// The shells whose `-c` script is read.
const SHELLS: [&str; 8] = [
    "sh",
    "/bin/sh",
    "/usr/bin/sh",
    "bash",
    "/bin/bash",
    "/usr/bin/bash",
    "ash",
    "/bin/ash",
];

/// Kubernetes' expansion of `$(NAME)` in a container's command, args and env values
/// (`third_party/forked/golang/expansion`): `$$` is `$`, `$(NAME)` is NAME's value; `None` when
/// NAME's value is unknown or NAME is not in `env` (it could be one of the Service variables
/// the kubelet adds, which the simulation does not model).
pub fn expand(text: &str, env: &Env) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.chars().next() {
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some('(') => match after.find(')') {
                Some(close) => {
                    out.push_str(env.get(&after[1..close])?.as_deref()?);
                    rest = &after[close + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            },
            Some(c) => {
                out.push('$');
                out.push(c);
                rest = &after[c.len_utf8()..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// What the container whose argv (command then args, `$(NAME)` already expanded) is `argv`
/// prints to its log, if it is a literal echo; `None` if it is anything else.
pub fn output(argv: &[String], env: &Env) -> Option<String> {
    let (program, args) = argv.split_first()?;
    if ECHO.contains(&program.as_str()) {
        return echo(args, false);
    }
    if SHELLS.contains(&program.as_str()) && args.first().map(String::as_str) == Some("-c") {
        return script(args.get(1)?, env);
    }
    None
}

/// `echo`'s output for `args`: one leading `-n` drops the newline; any other option (shells
/// differ on which they take) is not evaluated, nor is a backslash when a shell's builtin
/// `echo` reads it (dash's interprets escapes, bash's does not).
fn echo(args: &[String], builtin: bool) -> Option<String> {
    let (newline, args) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    if args.first().is_some_and(|a| {
        a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c))
    }) {
        return None;
    }
    if builtin && args.iter().any(|a| a.contains('\\')) {
        return None;
    }
    let mut out = args.join(" ");
    if newline {
        out.push('\n');
    }
    Some(out)
}

/// One piece of a shell word: literal text, or a variable's expansion.
enum Piece {
    Text(String),
    Var { name: String, quoted: bool },
}

/// A word of the script, and whether any part of it was quoted (a quoted empty word stays).
#[derive(Default)]
struct Word {
    pieces: Vec<Piece>,
    quoted: bool,
}

/// The output of a shell script made of `echo` commands only (separated by newlines, `;` or
/// `&&`), or `None`.
fn script(text: &str, env: &Env) -> Option<String> {
    let mut out = String::new();
    for command in parse(text)? {
        let fields = expand_words(command, env)?;
        let (program, args) = fields.split_first()?;
        if !ECHO.contains(&program.as_str()) {
            return None;
        }
        out.push_str(&echo(args, true)?);
    }
    Some(out)
}

/// The script's commands, each a list of words; `None` at anything but plain words, quotes,
/// `$NAME`, `${NAME}` and the separators.
fn parse(text: &str) -> Option<Vec<Vec<Word>>> {
    let mut commands: Vec<Vec<Word>> = vec![Vec::new()];
    let mut word: Option<Word> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut commands, &mut word),
            '\n' | ';' => {
                end_word(&mut commands, &mut word);
                commands.push(Vec::new());
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                end_word(&mut commands, &mut word);
                commands.push(Vec::new());
            }
            '\'' => {
                let w = word.get_or_insert_with(Word::default);
                w.quoted = true;
                let mut lit = String::new();
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => lit.push(c),
                    }
                }
                w.pieces.push(Piece::Text(lit));
            }
            '"' => {
                let w = word.get_or_insert_with(Word::default);
                w.quoted = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' => w.pieces.push(variable(&mut chars, true)?),
                        '\\' | '`' => return None,
                        c => w.pieces.push(Piece::Text(c.to_string())),
                    }
                }
            }
            '$' => {
                let piece = variable(&mut chars, false)?;
                word.get_or_insert_with(Word::default).pieces.push(piece);
            }
            c if "\\`|&<>()*?[]{}~#!".contains(c) => return None,
            c => word
                .get_or_insert_with(Word::default)
                .pieces
                .push(Piece::Text(c.to_string())),
        }
    }
    end_word(&mut commands, &mut word);
    commands.retain(|c| !c.is_empty());
    Some(commands)
}

fn end_word(commands: &mut [Vec<Word>], word: &mut Option<Word>) {
    if let (Some(w), Some(command)) = (word.take(), commands.last_mut()) {
        command.push(w);
    }
}

/// `$NAME` or `${NAME}` after a `$`; anything else (`$(`, `$1`, `${X:-y}`, a lone `$`) is
/// `None`.
fn variable(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, quoted: bool) -> Option<Piece> {
    let braced = chars.peek() == Some(&'{');
    if braced {
        chars.next();
    }
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        let fits = c == '_' || c.is_ascii_alphabetic() || (!name.is_empty() && c.is_ascii_digit());
        if !fits {
            break;
        }
        name.push(c);
        chars.next();
    }
    if name.is_empty() || (braced && chars.next() != Some('}')) {
        return None;
    }
    Some(Piece::Var { name, quoted })
}

/// The fields a command's words expand to: variables replaced (an unquoted one split on
/// whitespace, and refused if its value would be globbed), empty unquoted words dropped.
fn expand_words(words: Vec<Word>, env: &Env) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    for word in words {
        let mut current: Option<String> = word.quoted.then(String::new);
        for piece in word.pieces {
            match piece {
                Piece::Text(t) => current.get_or_insert_with(String::new).push_str(&t),
                Piece::Var { name, quoted } => {
                    let value = env.get(&name)?.as_deref()?;
                    if quoted {
                        current.get_or_insert_with(String::new).push_str(value);
                        continue;
                    }
                    if value.contains(['*', '?', '[']) {
                        return None;
                    }
                    let mut parts = value.split([' ', '\t', '\n']).filter(|p| !p.is_empty());
                    let starts_with_space = value.starts_with([' ', '\t', '\n']);
                    let ends_with_space = value.ends_with([' ', '\t', '\n']);
                    if starts_with_space && let Some(done) = current.take() {
                        fields.push(done);
                    }
                    if let Some(first) = parts.next() {
                        current.get_or_insert_with(String::new).push_str(first);
                        for part in parts {
                            fields.extend(current.take());
                            current = Some(part.to_string());
                        }
                    }
                    if ends_with_space && let Some(done) = current.take() {
                        fields.push(done);
                    }
                }
            }
        }
        fields.extend(current);
    }
    Some(fields)
}

#[cfg(test)]
#[path = "echo_tests.rs"]
mod tests;
