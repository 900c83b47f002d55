//! Every integration test of the irc plugin, in one binary.

#[path = "all/harness.rs"]
mod harness;
#[path = "all/inspircd.rs"]
mod inspircd;
#[path = "all/ngircd.rs"]
mod ngircd;
