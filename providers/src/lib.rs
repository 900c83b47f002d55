//! Model providers (in progress).
