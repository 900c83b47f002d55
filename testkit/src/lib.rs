//! Scripted model server (in progress).
