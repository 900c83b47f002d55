//! Every integration test of the irc plugin, in one binary.

#[path = "all/ngircd.rs"]
mod ngircd;
