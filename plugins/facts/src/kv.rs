//! The key-value store the facts live in, behind a trait: the host's `kv`
//! import in the component, an in-memory map in native tests (where the
//! SDK's host functions only return errors).

use talaria_plugin_sdk::{HostError, kv};

/// The two operations the store needs. No listing: the host's `list-keys`
/// reads every stored file, so the layout names its keys instead.
pub trait Kv {
    /// The value under `key`, if any.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, HostError>;
    /// Stores `value` under `key`, replacing what was there.
    fn set(&self, key: &str, value: &[u8]) -> Result<(), HostError>;
}

/// The host's store for this plugin and profile (needs `kv = true`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostKv;

impl Kv for HostKv {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, HostError> {
        kv::get(key)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<(), HostError> {
        kv::set(key, value)
    }
}

#[cfg(test)]
pub use fake::MemoryKv;

#[cfg(test)]
mod fake {
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap;
    use std::rc::Rc;

    use super::*;

    /// An in-memory store shared by its clones (a tool call and the memory
    /// instance see the same data, as they do through the host), counting
    /// reads and writes.
    #[derive(Clone, Debug, Default)]
    pub struct MemoryKv {
        inner: Rc<Inner>,
    }

    #[derive(Debug, Default)]
    struct Inner {
        values: RefCell<BTreeMap<String, Vec<u8>>>,
        gets: Cell<usize>,
        sets: Cell<usize>,
        failing: Cell<bool>,
    }

    impl MemoryKv {
        /// Reads so far.
        pub fn gets(&self) -> usize {
            self.inner.gets.get()
        }

        /// Writes so far.
        pub fn sets(&self) -> usize {
            self.inner.sets.get()
        }

        /// The stored value of `key` as text.
        pub fn text(&self, key: &str) -> Option<String> {
            let values = self.inner.values.borrow();
            values
                .get(key)
                .map(|v| String::from_utf8_lossy(v).into_owned())
        }

        /// The stored keys, in order.
        pub fn keys(&self) -> Vec<String> {
            self.inner.values.borrow().keys().cloned().collect()
        }

        /// Makes every later call fail (or work again).
        pub fn set_failing(&self, failing: bool) {
            self.inner.failing.set(failing);
        }

        fn check(&self) -> Result<(), HostError> {
            if self.inner.failing.get() {
                Err(HostError::Failed("the store is unavailable".into()))
            } else {
                Ok(())
            }
        }
    }

    impl Kv for MemoryKv {
        fn get(&self, key: &str) -> Result<Option<Vec<u8>>, HostError> {
            self.check()?;
            self.inner.gets.set(self.inner.gets.get() + 1);
            Ok(self.inner.values.borrow().get(key).cloned())
        }

        fn set(&self, key: &str, value: &[u8]) -> Result<(), HostError> {
            self.check()?;
            self.inner.sets.set(self.inner.sets.get() + 1);
            self.inner
                .values
                .borrow_mut()
                .insert(key.to_owned(), value.to_vec());
            Ok(())
        }
    }
}
