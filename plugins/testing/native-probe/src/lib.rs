//! A probe of the Talaria native C ABI (version 1):
//!
//! ```c
//! uint32_t    talaria_native_abi_version(void);          // 1
//! const char *talaria_describe(void);                    // JSON tool list, owned by the library
//! char       *talaria_call(const char *tool, const char *args_json);
//!                                                        // {"ok": ...} or {"error": "..."}
//! void        talaria_free(char *result);                // frees what talaria_call returned
//! ```
//!
//! No dependencies: the JSON is written and picked apart by hand.

use std::ffi::{CStr, CString, c_char};

const DESCRIBE: &CStr = c"[\
{\"name\":\"native_echo\",\"description\":\"Echoes its text from native code\",\
\"parameters\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]},\
\"read_only\":true},\
{\"name\":\"native_fail\",\"description\":\"Always refuses (a tool error)\",\
\"parameters\":{\"type\":\"object\",\"properties\":{}}},\
{\"name\":\"native_null\",\"description\":\"Returns a null pointer (a broken library)\",\
\"parameters\":{\"type\":\"object\",\"properties\":{}}},\
{\"name\":\"native_garbage\",\"description\":\"Returns something that is not the result JSON\",\
\"parameters\":{\"type\":\"object\",\"properties\":{}}}\
]";

/// The ABI version this library implements.
#[unsafe(no_mangle)]
pub extern "C" fn talaria_native_abi_version() -> u32 {
    1
}

/// The tools, as a JSON list; the string lives as long as the library.
#[unsafe(no_mangle)]
pub extern "C" fn talaria_describe() -> *const c_char {
    DESCRIBE.as_ptr()
}

/// Runs one tool; the result is freed with [`talaria_free`].
///
/// # Safety
/// `tool` and `args_json` are NUL-terminated strings (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn talaria_call(
    tool: *const c_char,
    args_json: *const c_char,
) -> *mut c_char {
    if tool.is_null() || args_json.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: both are non-null, NUL-terminated strings from the host.
    let (tool, args) = unsafe { (CStr::from_ptr(tool), CStr::from_ptr(args_json)) };
    let (tool, args) = (tool.to_string_lossy(), args.to_string_lossy());
    let result = match tool.as_ref() {
        "native_echo" => match string_field(&args, "text") {
            Some(text) => format!(
                "{{\"ok\":{{\"echo\":{},\"pid\":{}}}}}",
                quote(&text),
                std::process::id()
            ),
            None => "{\"error\":\"missing string argument `text`\"}".to_owned(),
        },
        "native_fail" => "{\"error\":\"native probe refused: it always does\"}".to_owned(),
        "native_null" => return std::ptr::null_mut(),
        "native_garbage" => "this is not JSON".to_owned(),
        other => format!("{{\"error\":{}}}", quote(&format!("unknown tool {other}"))),
    };
    CString::new(result).map_or(std::ptr::null_mut(), CString::into_raw)
}

/// Frees a result of [`talaria_call`].
///
/// # Safety
/// `result` came from `talaria_call` and is freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn talaria_free(result: *mut c_char) {
    if !result.is_null() {
        // SAFETY: it was made by `CString::into_raw` in `talaria_call`.
        drop(unsafe { CString::from_raw(result) });
    }
}

/// The string value of `"name": "..."` in a flat JSON object (simple escapes only).
fn string_field(json: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\"");
    let after = json[json.find(&key)? + key.len()..].trim_start();
    let mut chars = after
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?
        .chars();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// `text` as a JSON string.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
