//! Ranking facts for a query: BM25 relevance, a floor below which a fact is
//! not recalled at all, and trust weighting the order of what is left.

use crate::fact::Fact;
use crate::index::Index;
use crate::store::FactStore;

/// Least relevance recalled from a store of [`FULL_FLOOR_FACTS`] facts or
/// more. A word most facts contain scores less than this on its own, so a
/// query matching only such a word recalls nothing; a word a few facts share
/// scores well above it.
pub const MIN_RELEVANCE: f64 = 0.25;
/// Below this many facts the floor is lower in proportion: in a small store
/// every word facts share still says what they are about.
pub const FULL_FLOOR_FACTS: usize = 20;

/// The least relevance recalled from a store of `facts` facts.
pub fn relevance_floor(facts: usize) -> f64 {
    MIN_RELEVANCE * (facts as f64 / FULL_FLOOR_FACTS as f64).min(1.0)
}

/// How trust weights a relevant fact: from ×0.5 (trust 0) to ×1.5 (trust 1),
/// ×1 for a new fact.
pub fn trust_weight(trust: f64) -> f64 {
    0.5 + trust.clamp(0.0, 1.0)
}

/// The text a fact is found by: its content and tags.
fn searchable(fact: &Fact) -> String {
    if fact.tags.is_empty() {
        fact.content.clone()
    } else {
        format!("{} {}", fact.content, fact.tags.join(" "))
    }
}

/// A fact found for a query.
#[derive(Clone, Debug)]
pub struct Found<'a> {
    pub fact: &'a Fact,
    /// BM25 relevance to the query.
    pub relevance: f64,
    /// Relevance weighted by trust: the order.
    pub score: f64,
}

/// The search index of a [`FactStore`], rebuilt when the store changed.
#[derive(Debug, Default)]
pub struct Recall {
    index: Index,
    /// The store revision the index was built at; `None`: never built.
    revision: Option<u64>,
}

impl Recall {
    /// Up to `limit` facts relevant to `query` (of `category` when given),
    /// best first.
    pub fn search<'a>(
        &mut self,
        store: &'a FactStore,
        query: &str,
        category: Option<&str>,
        limit: usize,
    ) -> Vec<Found<'a>> {
        if self.revision != Some(store.revision()) {
            self.index = Index::build(store.facts().iter().map(searchable));
            self.revision = Some(store.revision());
        }
        let facts = store.facts();
        let floor = relevance_floor(facts.len());
        let mut found: Vec<Found<'a>> = self
            .index
            .search(query)
            .into_iter()
            .filter(|(_, relevance)| *relevance >= floor)
            .filter_map(|(doc, relevance)| {
                let fact = facts.get(doc)?;
                Some(Found {
                    fact,
                    relevance,
                    score: relevance * trust_weight(fact.trust),
                })
            })
            .filter(|found| category.is_none_or(|c| found.fact.category == c))
            .collect();
        found.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| b.fact.number().cmp(&a.fact.number()))
        });
        found.truncate(limit);
        found
    }
}

/// Facts as the short bullet lines recall gives the model, under `heading`;
/// empty when there are none.
pub fn bullets(heading: &str, found: &[Found<'_>]) -> String {
    if found.is_empty() {
        return String::new();
    }
    let mut text = heading.to_owned();
    for item in found {
        text.push_str(&format!("\n- [{}] {}", item.fact.id, item.fact.content));
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::kv::MemoryKv;
    use crate::store::NewFact;

    fn store_of(contents: &[&str]) -> FactStore {
        let mut store = FactStore::load(&MemoryKv::default()).unwrap();
        for content in contents {
            let new = NewFact {
                content,
                category: None,
                tags: &[],
                source: "",
            };
            store.add(new, 0).unwrap();
        }
        store
    }

    fn ids(found: &[Found<'_>]) -> Vec<String> {
        found.iter().map(|f| f.fact.id.clone()).collect()
    }

    #[test]
    fn an_unrelated_query_recalls_nothing() {
        let store = store_of(&["The user prefers dark mode", "Deploys run on Fridays"]);
        let mut recall = Recall::default();
        assert!(
            recall
                .search(&store, "Can you tell me a joke about cats?", None, 5)
                .is_empty()
        );
        assert_eq!(
            ids(&recall.search(&store, "when do deploys happen", None, 5)),
            ["f-2"]
        );
    }

    #[test]
    fn a_word_most_facts_share_is_not_enough_to_recall_them() {
        let mut contents: Vec<String> = (0..20)
            .map(|n| format!("project detail number {n}"))
            .collect();
        contents.push("the database is postgres".into());
        let refs: Vec<&str> = contents.iter().map(String::as_str).collect();
        let store = store_of(&refs);
        let mut recall = Recall::default();
        assert!(recall.search(&store, "a project", None, 5).is_empty());
        assert_eq!(
            ids(&recall.search(&store, "which database", None, 5)),
            ["f-21"]
        );
    }

    #[test]
    fn in_a_small_store_a_word_every_fact_shares_still_recalls() {
        let store = store_of(&["editor theme is solarized", "editor font is iosevka"]);
        let mut recall = Recall::default();
        assert_eq!(recall.search(&store, "editor", None, 5).len(), 2);
        assert!(relevance_floor(2) < relevance_floor(FULL_FLOOR_FACTS));
        assert_eq!(relevance_floor(10_000), MIN_RELEVANCE);
    }

    #[test]
    fn trust_reorders_equally_relevant_facts() {
        let mut store = store_of(&["editor theme is solarized", "editor font is iosevka"]);
        let mut recall = Recall::default();
        let before = ids(&recall.search(&store, "editor", None, 5));
        // Equal relevance: the newer first.
        assert_eq!(before, ["f-2", "f-1"]);
        store.rate("f-1", true);
        assert_eq!(
            ids(&recall.search(&store, "editor", None, 5)),
            ["f-1", "f-2"]
        );
        store.rate("f-1", false);
        store.rate("f-1", false);
        assert_eq!(
            ids(&recall.search(&store, "editor", None, 5)),
            ["f-2", "f-1"]
        );
    }

    #[test]
    fn the_index_follows_the_store() {
        let mut store = store_of(&["alpha release notes"]);
        let mut recall = Recall::default();
        assert_eq!(recall.search(&store, "release", None, 5).len(), 1);
        store.remove("f-1");
        assert!(recall.search(&store, "release", None, 5).is_empty());
        let new = NewFact {
            content: "beta release",
            category: Some("project"),
            tags: &["milestone".to_owned()],
            source: "",
        };
        store.add(new, 0).unwrap();
        assert_eq!(
            ids(&recall.search(&store, "milestone", Some("project"), 5)),
            ["f-2"]
        );
        assert!(
            recall
                .search(&store, "milestone", Some("user"), 5)
                .is_empty()
        );
    }

    #[test]
    fn bullets_carry_ids_and_nothing_found_is_empty() {
        let store = store_of(&["The user prefers dark mode"]);
        let mut recall = Recall::default();
        let found = recall.search(&store, "dark mode", None, 5);
        assert_eq!(
            bullets("Facts:", &found),
            "Facts:\n- [f-1] The user prefers dark mode"
        );
        assert_eq!(bullets("Facts:", &[]), "");
    }
}
