//! Label and field selectors as they appear in `labelSelector` / `fieldSelector` query parameters.

use serde_json::Value;

/// A selector string that could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The requirement text is not valid selector syntax.
    #[error("unable to parse requirement {0:?}")]
    Syntax(String),
    /// The field selector names a field the emulator does not index.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl Req {
    /// Whether the key is a valid label key and an `=`/`!=` value a valid label value (set
    /// values are checked as they are parsed).
    fn is_valid(&self) -> bool {
        match self {
            Req::Eq(k, v) | Req::NotEq(k, v) => is_label_key(k) && is_label_value(v),
            Req::In(k, _) | Req::NotIn(k, _) | Req::Exists(k) | Req::NotExists(k) => {
                is_label_key(k)
            }
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Req>);

/// Split on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The values of `in (a,b)` / `notin (a,b)`: at least one, each a valid label value.
fn parse_set(rest: &str, raw: &str) -> Result<Vec<String>, Error> {
    let syntax = || Error::Syntax(raw.to_string());
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(syntax)?;
    let values: Vec<String> = inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() || !values.iter().all(|v| is_label_value(v)) {
        return Err(syntax());
    }
    Ok(values)
}

/// A label name: at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends.
fn is_label_name(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_alphanumeric();
    name.len() <= 63
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A label value: empty or a label name.
fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_label_name(value)
}

/// A label key: a name, optionally behind a DNS subdomain prefix (`example.com/name`).
fn is_label_key(key: &str) -> bool {
    let dns_label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    match key.split_once('/') {
        Some((prefix, name)) => {
            prefix.len() <= 253 && prefix.split('.').all(dns_label) && is_label_name(name)
        }
        None => is_label_name(key),
    }
}

impl LabelSelector {
    /// Parse `a=b,c!=d,e in (f,g),h notin (i),j,!k`; keys and values must be valid label
    /// keys and values, as kube-apiserver requires.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let req = if let Some(key) = part.strip_prefix('!') {
                Req::NotExists(key.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                Req::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==") {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once('=') {
                Req::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                Req::NotIn(k.trim().into(), parse_set(rest, &part)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                Req::In(k.trim().into(), parse_set(rest, &part)?)
            } else if part.contains(char::is_whitespace) || part.contains('(') {
                return Err(Error::Syntax(part));
            } else {
                Req::Exists(part.clone())
            };
            if !req.is_valid() {
                return Err(Error::Syntax(part));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether no requirement was given (every object matches).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        self.matches_labels(obj.pointer("/metadata/labels").and_then(Value::as_object))
    }

    /// Whether these labels (an object's `metadata.labels`) satisfy every requirement.
    pub fn matches_labels(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::NotEq(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector over `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Whether no requirement was given (every object matches).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The field paths this selector compares.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(f, _, _)| f.as_str())
    }

    /// Parse `metadata.name=x,metadata.namespace!=y`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let (field, eq, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(Error::Syntax(part));
            };
            let field = field.trim();
            if !matches!(field, "metadata.name" | "metadata.namespace")
                && !field.starts_with("status.")
                && !field.starts_with("spec.")
                && field != "type"
                && !field.starts_with("involvedObject.")
                && !field.starts_with("regarding.")
                && !field.starts_with("reason")
            {
                return Err(Error::UnsupportedField(field.to_string()));
            }
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether an object satisfies every requirement (absent fields compare as empty strings).
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, eq, value)| {
            let actual = crate::wire::object::get_path(obj, field)
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            (actual == *value) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_based_requirements_match_labels() {
        let obj = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        assert!(
            LabelSelector::parse("app in (web,api),!gone,tier")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            !LabelSelector::parse("app notin (web)")
                .unwrap()
                .matches(&obj)
        );
        assert!(!LabelSelector::parse("tier!=front").unwrap().matches(&obj));
        assert!(LabelSelector::parse("app==web").unwrap().matches(&obj));
    }

    #[test]
    fn keys_and_values_kubernetes_rejects_are_errors_not_requirements() {
        for text in [
            "=web",
            "app=web=api",
            "app=(web)",
            "app!",
            "app in (web api)",
            "app notin (web))",
            "app in ()",
            "-app",
            "Example.com/app",
        ] {
            let parsed = LabelSelector::parse(text);
            assert!(parsed.is_err(), "{text:?} parsed as {parsed:?}");
        }
        assert!(LabelSelector::parse("example.com/app=Web_1.a,weir.dev/parent-uid").is_ok());
    }

    #[test]
    fn field_selector_compares_name_and_rejects_unknown_fields() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .matches(&obj)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns")
                .unwrap()
                .matches(&obj)
        );
        assert!(FieldSelector::parse("foo=bar").is_err());
    }
}
