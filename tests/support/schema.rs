//! A JSON Schema (draft 2020-12) validator for the subset our schemas use:
//! `type` (a name or a list of names), `required`, `properties`, `items`,
//! `enum` and `additionalProperties` (`false`, or a schema), with the
//! annotations `$schema`, `$id`, `title` and `description` ignored. Any other
//! keyword is reported as an error, so a schema cannot silently rely on a
//! rule this validator does not check.
//!
//! Not part of `support/mod.rs`: it needs `serde_json`, which the REPL
//! crate's tests (that include the module tree) do not depend on. A test
//! crate includes it with `#[path = "support/schema.rs"] mod schema;`.

#![allow(dead_code)] // each test crate uses a different part

use serde_json::Value;

const ANNOTATIONS: [&str; 4] = ["$schema", "$id", "title", "description"];
const KEYWORDS: [&str; 6] = [
    "type",
    "required",
    "properties",
    "items",
    "enum",
    "additionalProperties",
];

/// Every way `instance` breaks `schema`, each as `<JSON pointer>: <why>`;
/// empty when it validates.
pub fn validate(schema: &Value, instance: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, instance, "", &mut errors);
    errors
}

/// The JSON type names `value` has: an integer is a `number` too.
fn type_names(value: &Value) -> &'static [&'static str] {
    match value {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) if n.is_i64() || n.is_u64() => &["integer", "number"],
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => &["integer", "number"],
        Value::Number(_) => &["number"],
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// A JSON pointer segment (`~` and `/` escaped).
fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn check(schema: &Value, instance: &Value, at: &str, errors: &mut Vec<String>) {
    let here = if at.is_empty() { "/" } else { at };
    let schema = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            errors.push(format!("{here}: the schema `false` admits nothing"));
            return;
        }
        Value::Object(schema) => schema,
        _ => {
            errors.push(format!("{here}: a schema must be an object or a boolean"));
            return;
        }
    };
    for key in schema.keys() {
        if !KEYWORDS.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
            errors.push(format!("{here}: the validator does not know `{key}`"));
        }
    }
    if let Some(wanted) = schema.get("type") {
        let wanted: Vec<&str> = match wanted {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let has = type_names(instance);
        if !wanted.iter().any(|name| has.contains(name)) {
            errors.push(format!(
                "{here}: {instance} is {}, not {}",
                has[0],
                wanted.join(" or ")
            ));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(instance)
    {
        errors.push(format!(
            "{here}: {instance} is not one of {}",
            Value::Array(allowed.clone())
        ));
    }
    if let Value::Object(object) = instance {
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    errors.push(format!("{here}: `{name}` is required"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, value) in object {
            let path = format!("{at}/{}", segment(key));
            match properties.and_then(|p| p.get(key)) {
                Some(property) => check(property, value, &path, errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errors.push(format!("{here}: `{key}` is not an allowed property"))
                    }
                    Some(additional) => check(additional, value, &path, errors),
                    None => {}
                },
            }
        }
    }
    if let (Value::Array(elements), Some(items)) = (instance, schema.get("items")) {
        for (i, element) in elements.iter().enumerate() {
            check(items, element, &format!("{at}/{i}"), errors);
        }
    }
}

/// The keywords of `schema` and of every schema inside it that the
/// validator does not know, each with its JSON pointer; empty when the
/// whole schema is within the subset.
pub fn unknown_keywords(schema: &Value) -> Vec<String> {
    fn walk(schema: &Value, at: &str, out: &mut Vec<String>) {
        let Value::Object(object) = schema else {
            return;
        };
        for (key, value) in object {
            let path = format!("{at}/{}", segment(key));
            match key.as_str() {
                "properties" => {
                    for (name, property) in value.as_object().into_iter().flatten() {
                        walk(property, &format!("{path}/{}", segment(name)), out);
                    }
                }
                "items" | "additionalProperties" => walk(value, &path, out),
                known if KEYWORDS.contains(&known) || ANNOTATIONS.contains(&known) => {}
                _ => out.push(path),
            }
        }
    }
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}
