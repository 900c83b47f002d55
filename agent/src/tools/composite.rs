//! Routes each call to the dispatcher that owns the tool: native tools and
//! plugin tools behind one `ToolDispatcher`.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ToolContext, ToolDispatcher, ToolResult, ToolSpec, ValidatedCall,
};

/// Several dispatchers as one. The first to declare a name owns it.
pub struct CompositeTools {
    parts: Vec<Arc<dyn ToolDispatcher>>,
    owner: HashMap<String, usize>,
    specs: Vec<ToolSpec>,
}

impl CompositeTools {
    /// Combines `parts`; returns the names declared by more than one part
    /// (later declarations are dropped) so the caller can report them.
    pub fn new(parts: Vec<Arc<dyn ToolDispatcher>>) -> (Self, Vec<String>) {
        let mut owner = HashMap::new();
        let mut specs = Vec::new();
        let mut shadowed = Vec::new();
        for (index, part) in parts.iter().enumerate() {
            for spec in part.specs() {
                if owner.contains_key(&spec.name) {
                    shadowed.push(spec.name.clone());
                    continue;
                }
                owner.insert(spec.name.clone(), index);
                specs.push(spec);
            }
        }
        (
            Self {
                parts,
                owner,
                specs,
            },
            shadowed,
        )
    }
}

#[async_trait]
impl ToolDispatcher for CompositeTools {
    fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    async fn execute(
        &self,
        calls: &[ValidatedCall],
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        // Consecutive calls to one part go together, so its own scheduling applies.
        let mut results = Vec::with_capacity(calls.len());
        let mut start = 0;
        while start < calls.len() {
            let part = self.owner.get(&calls[start].call.name).copied();
            let end = calls[start..]
                .iter()
                .position(|c| self.owner.get(&c.call.name).copied() != part)
                .map_or(calls.len(), |offset| start + offset);
            let batch = &calls[start..end];
            match part.and_then(|index| self.parts.get(index)) {
                Some(dispatcher) => {
                    results.extend(dispatcher.execute(batch, context, cancel).await)
                }
                None => results.extend(batch.iter().map(|valid| {
                    ToolResult::error(
                        &valid.call,
                        format!("tool '{}' is not available", valid.call.name),
                    )
                })),
            }
            start = end;
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use talaria_kernel::ToolCall;

    struct Named(&'static [&'static str]);

    #[async_trait]
    impl ToolDispatcher for Named {
        fn specs(&self) -> Vec<ToolSpec> {
            self.0
                .iter()
                .map(|name| ToolSpec {
                    name: (*name).into(),
                    description: String::new(),
                    parameters: serde_json::json!({"type": "object"}),
                })
                .collect()
        }

        async fn execute(
            &self,
            calls: &[ValidatedCall],
            _: &ToolContext,
            _: &CancellationToken,
        ) -> Vec<ToolResult> {
            calls
                .iter()
                .map(|v| ToolResult::ok(&v.call, format!("{:?}", self.0)))
                .collect()
        }
    }

    fn call(id: &str, name: &str) -> ValidatedCall {
        ValidatedCall {
            call: ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: "{}".into(),
            },
            arguments: serde_json::json!({}),
        }
    }

    #[tokio::test]
    async fn calls_go_to_their_owner_in_call_order_and_duplicates_are_reported() {
        let (tools, shadowed) = CompositeTools::new(vec![
            Arc::new(Named(&["a", "b"])),
            Arc::new(Named(&["b", "c"])),
        ]);
        assert_eq!(shadowed, ["b"]);
        let names: Vec<_> = tools.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let context = ToolContext {
            session_id: "s".into(),
        };
        let calls = [
            call("1", "c"),
            call("2", "a"),
            call("3", "b"),
            call("4", "zzz"),
        ];
        let results = tools
            .execute(&calls, &context, &CancellationToken::new())
            .await;
        let ids: Vec<_> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3", "4"]);
        assert_eq!(results[0].content, r#"["b", "c"]"#);
        assert_eq!(results[1].content, r#"["a", "b"]"#);
        assert_eq!(
            results[2].content, r#"["a", "b"]"#,
            "the first declaration owns b"
        );
        assert!(results[3].is_error);
    }
}
