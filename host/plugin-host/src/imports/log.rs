//! The `log` import: into the plugin's own log, never the terminal.

use crate::bindings::talaria::plugin::log;
use crate::log::{LogLevel, LogSource};
use crate::state::HostCtx;

impl log::Host for HostCtx {
    async fn log(&mut self, level: log::Level, message: String) {
        let level = match level {
            log::Level::Trace => LogLevel::Trace,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Info => LogLevel::Info,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Error => LogLevel::Error,
        };
        self.plugin.log.push(level, LogSource::Plugin, &message);
    }
}
