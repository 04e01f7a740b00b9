//! What a Blog reads beyond its children: its theme ConfigMap by name and its posts by label selector.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use weir_guest_sdk::{Error, Related, Selection};

use crate::types::{LabelOperator, PostsSelector};
use crate::{Blog, BlogSpec};

/// The theme's key holding the CSS.
pub const STYLE_KEY: &str = "style.css";
/// A post's key holding its title (a ConfigMap without it is not a post).
pub const POST_TITLE_KEY: &str = "title";
/// A post's key holding its body (optional).
pub const POST_BODY_KEY: &str = "body";

/// One post of the page, not yet escaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    /// Its `title`.
    pub title: String,
    /// Its `body`, empty when absent.
    pub body: String,
}

/// What the Blog read: the theme's CSS (or why it is missing) and the posts in page order.
#[derive(Debug, Default)]
pub struct Read {
    /// The theme's `style.css`, unescaped, when the theme is found.
    pub css: Option<String>,
    /// The `ThemeNotFound` message when `spec.theme` is set but not found.
    pub theme_missing: Option<String>,
    /// The posts, ordered by ConfigMap name.
    pub posts: Vec<Post>,
}

/// The theme by name, then the posts by selector: what `select` answers (README, *select*).
pub fn selections(spec: &BlogSpec) -> Vec<Selection> {
    let mut selections = Vec::new();
    if let Some(theme) = &spec.theme {
        selections.push(Selection::name::<ConfigMap>(theme));
    }
    if let Some(posts) = &spec.posts_selector {
        selections.push(Selection::labels::<ConfigMap>(label_selector(posts)));
    }
    selections
}

/// Reads the theme and the posts from the selected objects the host passed.
pub fn read(blog: &Blog, related: &Related<'_>) -> Result<Read, Error> {
    let mut read = Read::default();
    if let Some(theme) = &blog.spec.theme {
        let config_map = related.get::<ConfigMap>(theme)?;
        match config_map {
            None => {
                read.theme_missing = Some(format!("theme ConfigMap {theme} does not exist"));
            }
            Some(cm) => match cm.data.and_then(|mut data| data.remove(STYLE_KEY)) {
                Some(css) => read.css = Some(css),
                None => {
                    read.theme_missing =
                        Some(format!("theme ConfigMap {theme} has no key {STYLE_KEY}"));
                }
            },
        }
    }
    if let Some(selector) = &blog.spec.posts_selector {
        // Sorted by name; the theme arrives in the same list, so match again.
        for cm in related.list::<ConfigMap>()? {
            let labels = cm.metadata.labels.unwrap_or_default();
            if !matches(selector, &labels) {
                continue;
            }
            let mut data = cm.data.unwrap_or_default();
            if let Some(title) = data.remove(POST_TITLE_KEY) {
                let body = data.remove(POST_BODY_KEY).unwrap_or_default();
                read.posts.push(Post { title, body });
            }
        }
    }
    Ok(read)
}

/// Whether `labels` satisfy `selector`, as Kubernetes decides it.
pub fn matches(selector: &PostsSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator {
                LabelOperator::In => value.is_some_and(|v| r.values.contains(v)),
                LabelOperator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                LabelOperator::Exists => value.is_some(),
                LabelOperator::DoesNotExist => value.is_none(),
            }
        })
}

fn label_selector(posts: &PostsSelector) -> LabelSelector {
    let expressions = posts
        .match_expressions
        .iter()
        .map(|r| LabelSelectorRequirement {
            key: r.key.clone(),
            operator: match r.operator {
                LabelOperator::In => "In",
                LabelOperator::NotIn => "NotIn",
                LabelOperator::Exists => "Exists",
                LabelOperator::DoesNotExist => "DoesNotExist",
            }
            .to_owned(),
            values: Some(r.values.clone()),
        })
        .collect();
    LabelSelector {
        match_labels: Some(posts.match_labels.clone()),
        match_expressions: Some(expressions),
    }
}
