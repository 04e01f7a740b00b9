//! Why a fixture case did not pass: one variant per way, its text ready to print.

use super::changes::Change;

/// Why a case did not pass; the text is ready to print (diffs included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The fixture file could not be used.
    Unreadable(String),
    /// The output differs from the expectation.
    Mismatch(String),
    /// The answer's children, status or requeue differ from the expectation in these fields.
    Changed {
        /// The fields.
        changes: Vec<Change>,
        /// The diff, ready to print.
        text: String,
    },
    /// Feeding the desired children back changed the desired output.
    NotConvergent(String),
    /// The host would refuse the answer and write nothing; the text is the message it would
    /// put in the parent's condition.
    Refused(String),
}
