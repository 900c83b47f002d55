//! The Talaria tool-plugin ABI for Zig: the `tool-provider` export and the
//! `log` import of the WIT package `talaria:plugin@0.1.3` (see ../wit),
//! written by hand against the component model's canonical ABI.
//!
//! A plugin lists its tools and calls `exportTools` once:
//!
//!     comptime { talaria.exportTools(&tools); }
//!
//! `wasm-tools component embed` checks these exports against the world
//! `tool-plugin` when the plugin is built, and `wasm-tools component new`
//! turns the core module into a component.

const std = @import("std");

/// The WIT API version this glue implements.
pub const api_version = "0.1.3";

/// How the scheduler may run a tool's calls.
pub const ToolFlags = struct {
    /// Never run alongside another call.
    never_parallel: bool = false,
    /// Has no side effects; may run in parallel with anything read-only.
    read_only: bool = false,
    /// Name of the argument holding the path the call touches.
    path_argument: ?[]const u8 = null,
};

/// Where a call runs.
pub const CallContext = struct {
    session_id: []const u8,
    call_id: []const u8,
    /// The working directory as the plugin sees it, when granted.
    cwd: ?[]const u8,
};

/// What a call returns: JSON text, or an error the model reads.
pub const Outcome = union(enum) {
    ok: []const u8,
    /// The arguments do not fit the schema or make no sense.
    invalid_arguments: []const u8,
    /// A capability the call needs was not granted.
    denied: []const u8,
    /// The call ran and failed.
    failed: []const u8,
};

/// One tool. `call` gets an arena that lives until the call returns to the
/// host (every call runs in a fresh instance).
pub const Tool = struct {
    name: []const u8,
    description: []const u8,
    /// JSON Schema of the arguments object.
    parameters: []const u8,
    flags: ToolFlags = .{},
    call: *const fn (arena: std.mem.Allocator, arguments: []const u8, context: CallContext) Outcome,
};

/// Log levels of the host's `log` interface.
pub const Level = enum(i32) { trace, debug, info, warn, @"error" };

const host = struct {
    extern "talaria:plugin/log@0.1.3" fn log(level: i32, ptr: [*]const u8, len: usize) void;
};

/// Writes a line to the host's log, tagged with the plugin's name.
pub fn log(level: Level, message: []const u8) void {
    host.log(@intFromEnum(level), message.ptr, message.len);
}

/// `log` with a format string; a message that does not fit in 1 KiB is cut.
pub fn logf(level: Level, comptime format: []const u8, args: anytype) void {
    var buffer: [1024]u8 = undefined;
    const message = std.fmt.bufPrint(&buffer, format, args) catch buffer[0..];
    log(level, message);
}

/// A panic handler that logs `plugin panicked: MESSAGE` to the host and traps
/// (the host reports the call as failed). Use it in the root file:
///
///     pub const panic = talaria.panic;
pub const panic = std.debug.FullPanic(panicked);

fn panicked(message: []const u8, _: ?usize) noreturn {
    logf(.@"error", "plugin panicked: {s}", .{message});
    @trap();
}

/// Parses the arguments as a JSON object (empty text or `null` count as
/// `{}`), or says what is wrong with them.
pub fn parseObject(arena: std.mem.Allocator, arguments: []const u8) union(enum) {
    object: std.json.ObjectMap,
    invalid: []const u8,
} {
    const text = std.mem.trim(u8, arguments, " \t\r\n");
    if (text.len == 0) return .{ .object = std.json.ObjectMap.init(arena) };
    const value = std.json.parseFromSliceLeaky(std.json.Value, arena, text, .{}) catch |err| {
        return .{ .invalid = std.fmt.allocPrint(arena, "arguments are not valid JSON ({s})", .{@errorName(err)}) catch "arguments are not valid JSON" };
    };
    return switch (value) {
        .object => |object| .{ .object = object },
        .null => .{ .object = std.json.ObjectMap.init(arena) },
        else => .{ .invalid = "arguments must be a JSON object" },
    };
}

// --- The canonical ABI ---------------------------------------------------
// Layouts of the WIT types as they sit in linear memory (wasm32: pointers
// and lengths are 32-bit, records are laid out like C structs).

const WitString = extern struct {
    ptr: [*]const u8,
    len: usize,

    fn from(text: []const u8) WitString {
        return .{ .ptr = text.ptr, .len = text.len };
    }

    fn slice(ptr: [*]const u8, len: usize) []const u8 {
        return ptr[0..len];
    }
};

const WitOptionString = extern struct {
    is_some: u8,
    value: WitString,
};

const WitToolFlags = extern struct {
    never_parallel: u8,
    read_only: u8,
    path_argument: WitOptionString,
};

const WitToolSpec = extern struct {
    name: WitString,
    description: WitString,
    parameters: WitString,
    flags: WitToolFlags,
};

const WitList = extern struct {
    ptr: [*]const WitToolSpec,
    len: usize,
};

/// `tool-error`: a variant of three cases, each carrying a string.
const WitToolError = extern struct {
    case: u8,
    message: WitString,
};

/// `result<json, tool-error>`.
const WitResult = extern struct {
    is_err: u8,
    payload: extern union { ok: WitString, err: WitToolError },
};

comptime {
    std.debug.assert(@sizeOf(WitString) == 8);
    std.debug.assert(@sizeOf(WitOptionString) == 12 and @offsetOf(WitOptionString, "value") == 4);
    std.debug.assert(@sizeOf(WitToolFlags) == 16 and @offsetOf(WitToolFlags, "path_argument") == 4);
    std.debug.assert(@sizeOf(WitToolSpec) == 40 and @offsetOf(WitToolSpec, "flags") == 24);
    std.debug.assert(@sizeOf(WitToolError) == 12 and @offsetOf(WitToolError, "message") == 4);
    std.debug.assert(@sizeOf(WitResult) == 16 and @offsetOf(WitResult, "payload") == 4);
}

/// Where results are returned: the host reads them right after the call.
var list_return: WitList = undefined;
var call_return: WitResult = undefined;

const gpa = std.heap.wasm_allocator;

/// The host allocates argument strings in this module's memory with it.
fn cabiRealloc(old_ptr: ?[*]u8, old_len: usize, alignment: usize, new_len: usize) callconv(.c) ?[*]u8 {
    const align_ = std.mem.Alignment.fromByteUnits(alignment);
    if (new_len == 0) return @ptrFromInt(alignment);
    const new_ptr = gpa.rawAlloc(new_len, align_, @returnAddress()) orelse @trap();
    if (old_ptr) |old| {
        if (old_len != 0) {
            @memcpy(new_ptr[0..@min(old_len, new_len)], old[0..@min(old_len, new_len)]);
            gpa.rawFree(old[0..old_len], align_, @returnAddress());
        }
    }
    return new_ptr;
}

/// Exports `tools` as the component's `tool-provider`.
pub fn exportTools(comptime tools: []const Tool) void {
    const Exports = struct {
        fn listTools() callconv(.c) *WitList {
            const specs = gpa.alloc(WitToolSpec, tools.len) catch @trap();
            inline for (tools, 0..) |tool, i| {
                specs[i] = .{
                    .name = WitString.from(tool.name),
                    .description = WitString.from(tool.description),
                    .parameters = WitString.from(tool.parameters),
                    .flags = .{
                        .never_parallel = @intFromBool(tool.flags.never_parallel),
                        .read_only = @intFromBool(tool.flags.read_only),
                        .path_argument = if (tool.flags.path_argument) |name|
                            .{ .is_some = 1, .value = WitString.from(name) }
                        else
                            .{ .is_some = 0, .value = WitString.from("") },
                    },
                };
            }
            list_return = .{ .ptr = specs.ptr, .len = specs.len };
            return &list_return;
        }

        fn callTool(
            name_ptr: [*]const u8,
            name_len: usize,
            arguments_ptr: [*]const u8,
            arguments_len: usize,
            session_id_ptr: [*]const u8,
            session_id_len: usize,
            call_id_ptr: [*]const u8,
            call_id_len: usize,
            cwd_is_some: u32,
            cwd_ptr: [*]const u8,
            cwd_len: usize,
        ) callconv(.c) *WitResult {
            var arena = std.heap.ArenaAllocator.init(gpa);
            // Not freed: the host reads the result after this returns, and
            // the instance is dropped after the call.
            const name = WitString.slice(name_ptr, name_len);
            const context = CallContext{
                .session_id = WitString.slice(session_id_ptr, session_id_len),
                .call_id = WitString.slice(call_id_ptr, call_id_len),
                .cwd = if (cwd_is_some != 0) WitString.slice(cwd_ptr, cwd_len) else null,
            };
            const outcome = dispatch(arena.allocator(), name, WitString.slice(arguments_ptr, arguments_len), context);
            call_return = switch (outcome) {
                .ok => |json| .{ .is_err = 0, .payload = .{ .ok = WitString.from(json) } },
                .invalid_arguments => |message| err(0, message),
                .denied => |message| err(1, message),
                .failed => |message| err(2, message),
            };
            return &call_return;
        }

        fn err(case: u8, message: []const u8) WitResult {
            return .{ .is_err = 1, .payload = .{ .err = .{ .case = case, .message = WitString.from(message) } } };
        }

        fn dispatch(arena: std.mem.Allocator, name: []const u8, arguments: []const u8, context: CallContext) Outcome {
            inline for (tools) |tool| {
                if (std.mem.eql(u8, name, tool.name)) return tool.call(arena, arguments, context);
            }
            const names = comptime blk: {
                var list: []const u8 = "";
                for (tools, 0..) |tool, i| list = list ++ (if (i == 0) "" else ", ") ++ tool.name;
                break :blk list;
            };
            return .{ .invalid_arguments = std.fmt.allocPrint(arena, "no tool {s}; this plugin has {s}", .{ name, names }) catch "no such tool" };
        }
    };
    const interface = "talaria:plugin/tool-provider@" ++ api_version;
    @export(&Exports.listTools, .{ .name = interface ++ "#list-tools" });
    @export(&Exports.callTool, .{ .name = interface ++ "#call-tool" });
    @export(&cabiRealloc, .{ .name = "cabi_realloc" });
}
