//! The talaria command line (in progress).
