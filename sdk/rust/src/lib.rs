//! Plugin SDK (in progress).
