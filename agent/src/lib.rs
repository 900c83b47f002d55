//! Agent assembly (in progress).
