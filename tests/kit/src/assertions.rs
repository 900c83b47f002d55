//! Assertions over recorded requests.
//!
//! Each check has a `check_*` form returning every problem found (one per line) and an
//! `assert_*` form that panics with that text. Requests are named `requests()[i]` by their
//! [`RecordedRequest::index`] and messages `messages()[j]` by their position in
//! [`RecordedRequest::messages`] (the system prompt, if any, is `messages()[0]`).

use std::collections::HashMap;

use crate::recorder::RecordedRequest;

fn label(request: &RecordedRequest) -> String {
    format!("requests()[{}] ({})", request.index, request.wire)
}

fn verdict(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Checks that in every request each assistant tool call has exactly one tool result, placed
/// right after the call (before any message that carries no results, as the real APIs
/// require), that no result is orphaned (answers no earlier call) and that call ids are
/// unique. Works on both wire formats.
pub fn check_tool_calls_paired(requests: &[RecordedRequest]) -> Result<(), String> {
    let mut problems = Vec::new();
    for request in requests {
        let at = label(request);
        // call id -> (message position, tool name, results seen)
        let mut calls: HashMap<String, (usize, String, usize)> = HashMap::new();
        let mut order = Vec::new();
        // Calls still waiting for their result; any message without results closes them.
        let mut open: Vec<String> = Vec::new();
        let mut late: Vec<String> = Vec::new();
        for (position, message) in request.messages().iter().enumerate() {
            if message.tool_results.is_empty() {
                for id in open.drain(..) {
                    if let Some((call_at, name, _)) = calls.get(&id) {
                        problems.push(format!(
                            "{at}: tool call {id:?} ({name}) in messages()[{call_at}] is not \
                             answered before messages()[{position}]"
                        ));
                    }
                    late.push(id);
                }
            }
            open.retain(|id| !message.tool_results.iter().any(|r| &r.call_id == id));
            // Results first: a result never answers a call made in its own message.
            for result in &message.tool_results {
                match calls.get_mut(&result.call_id) {
                    None => problems.push(format!(
                        "{at}: tool result for {:?} in messages()[{position}] is orphaned: no \
                         earlier tool call has that id",
                        result.call_id
                    )),
                    Some((call_at, name, seen)) => {
                        *seen += 1;
                        if *seen == 2 {
                            problems.push(format!(
                                "{at}: tool call {:?} ({name}) in messages()[{call_at}] has more \
                                 than one tool result (another in messages()[{position}])",
                                result.call_id
                            ));
                        }
                    }
                }
            }
            for call in &message.tool_calls {
                if let Some((first, _, _)) = calls.get(&call.id) {
                    problems.push(format!(
                        "{at}: tool call id {:?} ({}) in messages()[{position}] repeats the id of \
                         the call in messages()[{first}]",
                        call.id, call.name
                    ));
                    continue;
                }
                calls.insert(call.id.clone(), (position, call.name.clone(), 0));
                order.push(call.id.clone());
                open.push(call.id.clone());
            }
        }
        for id in order.into_iter().filter(|id| !late.contains(id)) {
            if let Some((position, name, 0)) = calls.get(&id) {
                problems.push(format!(
                    "{at}: tool call {id:?} ({name}) in messages()[{position}] has no tool result"
                ));
            }
        }
    }
    verdict(problems)
}

/// Panicking form of [`check_tool_calls_paired`].
#[track_caller]
pub fn assert_tool_calls_paired(requests: &[RecordedRequest]) {
    if let Err(problems) = check_tool_calls_paired(requests) {
        panic!("tool calls are not paired with their results:\n{problems}");
    }
}

/// Where two texts first differ, with a little context from each.
fn difference(expected: &str, actual: &str) -> String {
    let at = expected
        .bytes()
        .zip(actual.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(actual.len()));
    let excerpt = |text: &str| {
        let start = floor_char(text, at.saturating_sub(20));
        let end = floor_char(text, (at + 40).min(text.len()));
        format!("{:?}", &text[start..end])
    };
    format!(
        "first difference at byte {at} (lengths {} vs {}): {} vs {}",
        expected.len(),
        actual.len(),
        excerpt(expected),
        excerpt(actual)
    )
}

fn floor_char(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Checks that the system prompt ([`RecordedRequest::system_prompt_raw`]) and the tool list
/// ([`RecordedRequest::tools_raw`]) are byte-identical across `requests`, so a provider's
/// prompt cache keeps hitting.
pub fn check_prefix_stable(requests: &[RecordedRequest]) -> Result<(), String> {
    let Some(first) = requests.first() else {
        return Ok(());
    };
    let (system, tools) = (first.system_prompt_raw(), first.tools_raw());
    let mut problems = Vec::new();
    for request in &requests[1..] {
        for (part, expected, actual) in [
            ("system prompt", &system, request.system_prompt_raw()),
            ("tool list", &tools, request.tools_raw()),
        ] {
            if *expected != actual {
                problems.push(format!(
                    "{}: {part} differs from {}: {}",
                    label(request),
                    label(first),
                    difference(expected, &actual)
                ));
            }
        }
    }
    verdict(problems)
}

/// Panicking form of [`check_prefix_stable`].
#[track_caller]
pub fn assert_prefix_stable(requests: &[RecordedRequest]) {
    if let Err(problems) = check_prefix_stable(requests) {
        panic!("prompt prefix is not stable:\n{problems}");
    }
}
