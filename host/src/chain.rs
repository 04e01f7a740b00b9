//! An error and all its sources on one line, for logs, status messages, Events and reports.
//!
//! tracing-subscriber's `fmt` prints an `&dyn Error` field with an `error.sources=[..]` list, but
//! kube's errors already repeat their source in their own message (`"ApiError: {0}"` plus
//! `#[source]`), so that list would show the API's answer twice. [`Chain`] walks the sources
//! itself and skips one whose text its parent already showed.

use std::error::Error;
use std::fmt;

/// Displays `outer: cause: root cause`, each cause once.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        f.write_str(&shown)?;
        let mut source = self.0.source();
        while let Some(err) = source {
            let text = err.to_string();
            if !shown.contains(&text) {
                write!(f, ": {text}")?;
                shown = text;
            }
            source = err.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Chain;

    #[derive(Debug, thiserror::Error)]
    #[error("updating the finalizers of Blog default/hello")]
    struct Outer(#[source] Middle);

    /// Shaped like `kube::Error::Api`: the message embeds the source it also returns.
    #[derive(Debug, thiserror::Error)]
    #[error("ApiError: {0}")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn every_source_is_shown_in_order() {
        #[derive(Debug, thiserror::Error)]
        #[error("patching the status of Blog default/hello")]
        struct Plain(#[source] std::io::Error);
        let e = Plain(std::io::Error::other("connection refused"));
        assert_eq!(
            Chain(&e).to_string(),
            "patching the status of Blog default/hello: connection refused"
        );
    }

    #[test]
    fn a_source_its_parent_already_printed_is_not_repeated() {
        let e = Outer(Middle(std::io::Error::other("409 Conflict")));
        assert_eq!(
            Chain(&e).to_string(),
            "updating the finalizers of Blog default/hello: ApiError: 409 Conflict"
        );
    }

    #[test]
    fn an_error_without_a_source_is_shown_alone() {
        let e = std::io::Error::other("no cluster");
        assert_eq!(Chain(&e).to_string(), "no cluster");
    }
}
