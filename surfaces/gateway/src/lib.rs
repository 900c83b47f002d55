//! The gateway: one agent behind chat platforms (issue 24, being built).
//! So far: [`split_message`], which cuts a long answer into messages under a
//! platform's limit without breaking its code blocks. Who may talk is
//! `talaria-pairing`'s.

mod split;

pub use split::{Measure, split_message};
