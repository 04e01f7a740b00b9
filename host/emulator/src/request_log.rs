//! The request log: the latest requests served, kept in a ring and read from a cursor.
//!
//! Each request gets the next sequence number; the log keeps the last
//! [`crate::EmulatorConfig::request_log`] of them and drops the oldest. A reader holds a
//! [`RequestCursor`] and takes what was served since it, so polling the log costs what is new,
//! not a copy of everything.

use std::collections::VecDeque;

use crate::config::RequestRecord;

/// A reader's place in the request log: the sequence number of the first request it has not read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestCursor(u64);

/// The last `capacity` requests served, oldest first.
#[derive(Debug)]
pub struct RequestLog {
    records: VecDeque<RequestRecord>,
    capacity: usize,
    /// The sequence number of `records[0]` (of the next record when empty).
    first: u64,
}

impl RequestLog {
    /// An empty log keeping at most `capacity` records (0 keeps none).
    pub fn new(capacity: usize) -> Self {
        RequestLog {
            records: VecDeque::new(),
            capacity,
            first: 0,
        }
    }

    /// Append one record, dropping the oldest when full.
    pub fn push(&mut self, record: RequestRecord) {
        if self.capacity == 0 {
            self.first += 1;
            return;
        }
        if self.records.len() == self.capacity {
            self.records.pop_front();
            self.first += 1;
        }
        self.records.push_back(record);
    }

    /// The cursor just past the newest record: reading from it returns only later requests.
    pub fn end(&self) -> RequestCursor {
        RequestCursor(self.first + self.records.len() as u64)
    }

    /// The records from `cursor` on (those already dropped are skipped), moving `cursor` past
    /// them.
    pub fn since(&self, cursor: &mut RequestCursor) -> Vec<RequestRecord> {
        let skip = usize::try_from(cursor.0.saturating_sub(self.first)).unwrap_or(usize::MAX);
        let out = self.records.iter().skip(skip).cloned().collect();
        *cursor = self.end();
        out
    }

    /// Every record kept, oldest first.
    pub fn all(&self) -> Vec<RequestRecord> {
        self.records.iter().cloned().collect()
    }

    /// Drop every record; cursors stay valid and read only later requests.
    pub fn clear(&mut self) {
        self.first += self.records.len() as u64;
        self.records.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &str) -> RequestRecord {
        RequestRecord {
            method: http::Method::GET,
            path: path.into(),
            query: String::new(),
            status: 200,
            field_manager: None,
            content_type: None,
            user_agent: None,
            user: None,
            denied: None,
        }
    }

    fn paths(records: &[RequestRecord]) -> Vec<&str> {
        records.iter().map(|r| r.path.as_str()).collect()
    }

    #[test]
    fn a_full_log_drops_its_oldest_records() {
        let mut log = RequestLog::new(2);
        for p in ["/a", "/b", "/c"] {
            log.push(record(p));
        }
        assert_eq!(paths(&log.all()), ["/b", "/c"]);
    }

    #[test]
    fn a_cursor_reads_each_request_once() {
        let mut log = RequestLog::new(10);
        let mut cursor = log.end();
        log.push(record("/a"));
        assert_eq!(paths(&log.since(&mut cursor)), ["/a"]);
        assert!(log.since(&mut cursor).is_empty());
        log.push(record("/b"));
        assert_eq!(paths(&log.since(&mut cursor)), ["/b"]);
    }

    #[test]
    fn a_reader_that_fell_behind_gets_what_is_left_and_a_cleared_log_keeps_cursors_valid() {
        let mut log = RequestLog::new(2);
        let mut behind = log.end();
        for p in ["/a", "/b", "/c"] {
            log.push(record(p));
        }
        assert_eq!(paths(&log.since(&mut behind)), ["/b", "/c"]);
        log.clear();
        log.push(record("/d"));
        assert_eq!(paths(&log.since(&mut behind)), ["/d"]);
        assert_eq!(paths(&log.all()), ["/d"]);
    }
}
