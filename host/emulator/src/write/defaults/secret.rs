//! Secret defaults: `stringData` folded into `data`, `type: Opaque`.

use base64::Engine;
use serde_json::{Value, json};

use super::{object_at, set_if_empty};

/// `Convert_v1_Secret_To_core_Secret` (`pkg/apis/core/v1/conversion.go`) writes each
/// `stringData` entry over `data` and never stores `stringData`; `SetDefaults_Secret`
/// (`pkg/apis/core/v1/defaults.go`) sets `type` to `Opaque` when empty.
pub fn secret(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    if let Some(Value::Object(strings)) = m.remove("stringData")
        && !strings.is_empty()
    {
        let data = object_at(m, "data");
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(k, json!(encoded));
        }
    }
    set_if_empty(m, "type", json!("Opaque"));
}
