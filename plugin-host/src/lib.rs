//! Plugin host (in progress).
