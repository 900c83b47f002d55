//! The one registry of slash commands.
