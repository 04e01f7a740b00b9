//! Bounds text a plugin controls before the host stores or prints it.

use std::borrow::Cow;

/// Cuts `text` to at most `max_bytes` bytes, on a UTF-8 character boundary,
/// ending with a marker that says how many bytes were cut
/// (`… [truncated 1048576 bytes]`). The marker counts towards `max_bytes`, so
/// the result always fits where `max_bytes` is a hard limit (a condition
/// message, an Event note). Text that fits is returned as it is.
pub fn truncate(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    // The marker is longest when the most bytes are cut; reserve that much.
    let reserve = marker(text.len()).len();
    let Some(room) = max_bytes.checked_sub(reserve) else {
        return Cow::Borrowed(&text[..text.floor_char_boundary(max_bytes)]);
    };
    let kept = text.floor_char_boundary(room);
    Cow::Owned(format!("{}{}", &text[..kept], marker(text.len() - kept)))
}

/// Same as [`truncate`], for an owned string (no copy when it fits).
pub(crate) fn truncate_owned(text: String, max_bytes: usize) -> String {
    match truncate(&text, max_bytes) {
        Cow::Borrowed(_) => text,
        Cow::Owned(cut) => cut,
    }
}

fn marker(cut: usize) -> String {
    format!("… [truncated {cut} bytes]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_fits_is_returned_unchanged() {
        assert!(matches!(truncate("short", 5), Cow::Borrowed("short")));
    }

    #[test]
    fn long_text_is_cut_to_the_limit_with_a_marker_counting_the_cut_bytes() {
        let text = "x".repeat(1 << 20);
        let cut = truncate(&text, 4096);
        assert!(cut.len() <= 4096, "{}", cut.len());
        let kept = cut.find('…').unwrap_or_default();
        assert_eq!(
            &cut[kept..],
            format!("… [truncated {} bytes]", (1 << 20) - kept)
        );
        assert!(kept > 4000, "kept {kept}");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = "é".repeat(100);
        for max in 30..60 {
            let cut = truncate(&text, max);
            assert!(cut.len() <= max);
            assert!(cut.starts_with('é') && cut.contains("[truncated "), "{cut}");
        }
        assert_eq!(truncate(&text, 3), "é", "no room for the marker: cut only");
    }
}
