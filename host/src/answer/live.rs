//! The live objects an answer is judged against: the controller's cache, or a fixture's observed objects.

use std::sync::Arc;

use kube::api::DynamicObject;

use crate::runtime::ObjectKey;

/// The live objects the checks look a desired child's name up in (ownership of a name): the
/// controller's cache, or the observed objects of a `weir test` fixture.
pub trait LiveObjects {
    /// The object of this kind under this key, if one exists.
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>>;
}

impl<T: LiveObjects + ?Sized> LiveObjects for Arc<T> {
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        (**self).get(api_version, kind, key)
    }
}
