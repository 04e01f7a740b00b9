//! The request log: the latest requests served, kept in a ring and read from a cursor.
//!
//! Each request gets the next sequence number; the log keeps the last
//! [`crate::EmulatorConfig::request_log`] of them and drops the oldest. A reader holds a
//! [`RequestCursor`] and takes what was served since it, so polling the log costs what is new,
//! not a copy of everything. The ring shares the strings requests repeat (a collection's path,
//! the client's User-Agent, the content type, the user), so a full log of 100,000 requests
//! costs about 150 bytes a request rather than a copy of each string.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use crate::state::config::RequestRecord;

/// A reader's place in the request log: the sequence number of the first request it has not read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestCursor(u64);

/// One request as the ring keeps it: [`RequestRecord`] with its strings shared.
#[derive(Debug)]
struct Kept {
    method: http::Method,
    path: Arc<str>,
    query: Arc<str>,
    status: u16,
    field_manager: Option<Arc<str>>,
    content_type: Option<Arc<str>>,
    user_agent: Option<Arc<str>>,
    user: Option<Arc<str>>,
    denied: Option<Box<str>>,
}

impl Kept {
    fn record(&self) -> RequestRecord {
        let owned = |s: &Option<Arc<str>>| s.as_deref().map(String::from);
        RequestRecord {
            method: self.method.clone(),
            path: self.path.to_string(),
            query: self.query.to_string(),
            status: self.status,
            field_manager: owned(&self.field_manager),
            content_type: owned(&self.content_type),
            user_agent: owned(&self.user_agent),
            user: owned(&self.user),
            denied: self.denied.as_deref().map(String::from),
        }
    }
}

/// The strings the kept records share; one no record holds any more is dropped at the next
/// sweep (every `capacity` records), so the table stays as small as the ring's distinct strings.
#[derive(Debug, Default)]
struct Strings {
    table: HashSet<Arc<str>>,
    until_sweep: usize,
}

impl Strings {
    fn share(&mut self, s: String) -> Arc<str> {
        if let Some(shared) = self.table.get(s.as_str()) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        self.table.insert(shared.clone());
        shared
    }

    fn sweep_every(&mut self, capacity: usize) {
        if self.until_sweep > 0 {
            self.until_sweep -= 1;
            return;
        }
        self.table.retain(|s| Arc::strong_count(s) > 1);
        self.until_sweep = capacity;
    }
}

/// The last `capacity` requests served, oldest first.
#[derive(Debug)]
pub struct RequestLog {
    records: VecDeque<Kept>,
    capacity: usize,
    /// The sequence number of `records[0]` (of the next record when empty).
    first: u64,
    strings: Strings,
}

impl RequestLog {
    /// An empty log keeping at most `capacity` records (0 keeps none).
    pub fn new(capacity: usize) -> Self {
        RequestLog {
            records: VecDeque::new(),
            capacity,
            first: 0,
            strings: Strings::default(),
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
        self.strings.sweep_every(self.capacity);
        let strings = &mut self.strings;
        let kept = Kept {
            method: record.method,
            path: strings.share(record.path),
            query: strings.share(record.query),
            status: record.status,
            field_manager: record.field_manager.map(|s| strings.share(s)),
            content_type: record.content_type.map(|s| strings.share(s)),
            user_agent: record.user_agent.map(|s| strings.share(s)),
            user: record.user.map(|s| strings.share(s)),
            denied: record.denied.map(String::into_boxed_str),
        };
        self.records.push_back(kept);
    }

    /// The cursor just past the newest record: reading from it returns only later requests.
    pub fn end(&self) -> RequestCursor {
        RequestCursor(self.first + self.records.len() as u64)
    }

    /// The records from `cursor` on (those already dropped are skipped), moving `cursor` past
    /// them.
    pub fn since(&self, cursor: &mut RequestCursor) -> Vec<RequestRecord> {
        let skip = usize::try_from(cursor.0.saturating_sub(self.first)).unwrap_or(usize::MAX);
        let out = self.records.iter().skip(skip).map(Kept::record).collect();
        *cursor = self.end();
        out
    }

    /// Every record kept, oldest first.
    pub fn all(&self) -> Vec<RequestRecord> {
        self.records.iter().map(Kept::record).collect()
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

    #[test]
    fn repeated_strings_are_kept_once_and_forgotten_with_their_records() {
        let mut log = RequestLog::new(3);
        for _ in 0..3 {
            log.push(record("/api/v1/namespaces/default/configmaps"));
        }
        let path = |log: &RequestLog, i: usize| log.records[i].path.clone();
        assert!(
            Arc::ptr_eq(&path(&log, 0), &path(&log, 2)),
            "one copy of the path"
        );
        for p in ["/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h"] {
            log.push(record(p));
        }
        assert_eq!(paths(&log.all()), ["/f", "/g", "/h"]);
        assert!(
            !log.strings
                .table
                .contains("/api/v1/namespaces/default/configmaps"),
            "a string no kept record holds is dropped at the next sweep"
        );
        assert!(
            log.strings.table.len() <= 2 * 3 + 1,
            "{:?}",
            log.strings.table
        );
    }
}
