//! Serving HTTP: from the gate in front of every request, through one resource request and what
//! it can ask for, to the URL routes and the server task.
//!
//! In reading order: `access` (the middleware that answers 401 and 403, and checks
//! `blockOwnerDeletion` against the owner's finalizers), `printers` (the built-in kinds' columns,
//! `-o wide` included) and `table` (`Table` output), `watch` (watch streams: resume from a
//! resourceVersion, bookmarks, `sendInitialEvents`, in-stream `410 Expired`), `scale` (the
//! `/scale` subresource), `request` (one parsed resource request), `list` (lists with continue
//! tokens, and watches of a collection), `delete` (deletes with their `DeleteOptions`), `logs`
//! (a Pod's `/log`, from the simulated kubelet), `handlers` (one resource request dispatched:
//! get, create, update, patch, `/status`, a Namespace's `/finalize`),
//! `reviews` (the self-reviews of `kubectl auth can-i|whoami`), `routes` (URL paths laid out as
//! kube-apiserver does), `server` (the router with the request-log middleware, and the task
//! serving it, over TLS when secure, with the workload task beside it).

pub mod access;
pub mod printers;
pub mod table;
pub mod watch;
pub mod scale;
pub mod request;
pub mod list;
pub mod delete;
pub mod logs;
pub mod handlers;
pub mod reviews;
pub mod routes;
pub mod server;
