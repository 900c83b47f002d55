//! Tests of the tools over a scripted transport and recorded answers
//! (`tests/fixtures/`, see its README for where each comes from).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod extract;
mod search;

use std::cell::RefCell;
use std::collections::HashMap;

use talaria_plugin_sdk::HostError;

use crate::net::{Fetched, HttpCall, Transport};

/// A recorded file's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A recorded file as text.
pub fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).unwrap()
}

/// An answer with a status, a content type and a body.
pub fn answer(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Fetched {
    Fetched {
        status,
        headers: vec![("content-type".into(), content_type.into())],
        body: body.into(),
        truncated: false,
    }
}

/// A redirect to `location`.
pub fn redirect(status: u16, location: &str) -> Fetched {
    Fetched {
        status,
        headers: vec![("location".into(), location.into())],
        body: Vec::new(),
        truncated: false,
    }
}

/// Answers by URL, and remembers what was sent.
#[derive(Default)]
pub struct Scripted {
    routes: HashMap<String, Result<Fetched, HostError>>,
    pub calls: RefCell<Vec<HttpCall>>,
}

impl Scripted {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn on(mut self, url: &str, answer: Fetched) -> Self {
        self.routes.insert(url.into(), Ok(answer));
        self
    }

    pub fn fail(mut self, url: &str, error: HostError) -> Self {
        self.routes.insert(url.into(), Err(error));
        self
    }

    pub fn urls(&self) -> Vec<String> {
        self.calls.borrow().iter().map(|c| c.url.clone()).collect()
    }

    pub fn only_call(&self) -> HttpCall {
        let calls = self.calls.borrow();
        assert_eq!(calls.len(), 1, "{calls:?}");
        calls[0].clone()
    }
}

impl Transport for Scripted {
    fn send(&self, call: &HttpCall, max_bytes: usize) -> Result<Fetched, HostError> {
        self.calls.borrow_mut().push(call.clone());
        let mut answer = self
            .routes
            .get(&call.url)
            .cloned()
            .unwrap_or_else(|| Err(HostError::Failed(format!("no route for {}", call.url))))?;
        if answer.body.len() > max_bytes {
            answer.body.truncate(max_bytes);
            answer.truncated = true;
        }
        Ok(answer)
    }
}
