//! `wasi:sockets/ip-name-lookup` for plugins: wasmtime-wasi's own, except that a plugin with
//! no network grant is refused in words naming the grant it lacks (logged, and repeated in the
//! call's error) as its connections and HTTP requests are. wasmtime-wasi's own refusal says
//! only "permission denied", which is all a Python or Rust plugin resolving a host name first
//! would pass on.

use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{
    self, Host, HostResolveAddressStream, ResolveAddressStream,
};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

use crate::imports::http::HttpPolicy;
use crate::state::PluginState;

/// Why a plugin with no network grant may not look up `name`, and what grants it.
pub(crate) fn ungranted_lookup(plugin: &str, name: &str) -> String {
    format!(
        "refused name lookup of {name}: plugin {plugin} has no network grant (its manifest \
         must ask for one under [capabilities] network, and the user grant it: talaria plugin \
         grant {plugin} network:{name}:PORT)"
    )
}

/// One call's view: wasmtime-wasi's sockets and the instance's network policy.
pub(crate) struct GuardedLookup<'a> {
    sockets: WasiSocketsCtxView<'a>,
    policy: &'a HttpPolicy,
}

struct GuardedLookupData;

impl HasData for GuardedLookupData {
    type Data<'a> = GuardedLookup<'a>;
}

/// Replaces wasmtime-wasi's `ip-name-lookup` in `linker` (which already has it) by the
/// guarded one.
pub(crate) fn shadow_in(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = ip_name_lookup::add_to_linker::<PluginState, GuardedLookupData>(linker, |state| {
        GuardedLookup {
            sockets: WasiSocketsCtxView {
                ctx: state.wasi.sockets(),
                table: &mut state.table,
            },
            policy: &state.http_policy,
        }
    });
    linker.allow_shadowing(false);
    added
}

// The lookup's errors are the network interface's: converted as wasmtime-wasi converts them.
impl network::Host for GuardedLookup<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        self.sockets.convert_error_code(error)
    }

    fn network_error_code(
        &mut self,
        error: Resource<network::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        self.sockets.network_error_code(error)
    }
}

impl network::HostNetwork for GuardedLookup<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.sockets, network)
    }
}

impl Host for GuardedLookup<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        if self.policy.net.is_empty() {
            let reason = ungranted_lookup(&self.policy.plugin, &name);
            self.policy.refused.record(&self.policy.log, &reason);
            return Err(ErrorCode::AccessDenied.into());
        }
        self.sockets.resolve_addresses(network, name)
    }
}

impl HostResolveAddressStream for GuardedLookup<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        self.sockets.resolve_next_address(stream)
    }

    fn subscribe(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        self.sockets.subscribe(stream)
    }

    async fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        HostResolveAddressStream::drop(&mut self.sockets, stream).await
    }
}
