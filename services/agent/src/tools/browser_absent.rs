//! A build without the `browser` feature (a slim distribution): no browser tools, and a surface
//! configured to offer them says they are left out.

use std::sync::Arc;

use async_trait::async_trait;
use talaria_images::ImageStore;
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ValidatedCall};
use talaria_profile::config::ConfigFile;
use talaria_profile::home::ProfileHome;
use talaria_tools::{ToolEntry, ToolSource};

use crate::auxiliary::Auxiliary;

/// No browser tools to admit.
pub const BROWSER_TOOLS: &[&str] = &[];

/// Keeps no browsers: there are none in this build.
#[derive(Debug)]
pub struct BrowserKeeper;

impl BrowserKeeper {
    /// A keeper with nothing to keep.
    pub fn new() -> Arc<Self> {
        Arc::new(Self)
    }
}

/// Never made: there are no browser tools in this build.
pub enum BrowserTools {}

impl BrowserTools {
    /// None, with a notice when the surface was configured to offer them.
    pub fn for_session(
        config: &ConfigFile,
        _home: &ProfileHome,
        surface: &str,
        _vision: (Arc<Auxiliary>, ImageStore),
        _kept: Option<(&Arc<BrowserKeeper>, &str)>,
        notices: &mut Vec<String>,
    ) -> Option<Self> {
        if config.browser.offered_on(surface) {
            notices.push(
                "browser tools left out: this distribution of Talaria was built without the \
                 browser"
                    .to_owned(),
            );
        }
        None
    }
}

#[async_trait]
impl ToolSource for BrowserTools {
    fn tools(&self) -> Vec<ToolEntry> {
        match *self {}
    }

    async fn call(&self, _: &ValidatedCall, _: &ToolContext, _: &CancellationToken) -> ToolResult {
        match *self {}
    }
}
