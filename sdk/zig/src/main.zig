//! A Talaria tool plugin in Zig: one tool, `checksum`.
//!
//! Built as a wasm32-wasi (preview 1) core module, then made a component of
//! the world `tool-plugin` by `wasm-tools` with the WASI preview 1 adapter
//! (see build.sh). `talaria.zig` holds the ABI glue.

const std = @import("std");
const talaria = @import("talaria.zig");

const algorithms = [_][]const u8{ "crc32", "adler32", "fnv1a32" };

const checksum_schema =
    \\{"type":"object","properties":{
    \\"text":{"type":"string","description":"The text to checksum (its UTF-8 bytes)."},
    \\"algorithm":{"type":"string","enum":["crc32","adler32","fnv1a32"],"description":"The checksum to compute (default crc32)."}},
    \\"required":["text"],"additionalProperties":false}
;

const tools = [_]talaria.Tool{
    .{
        .name = "checksum",
        .description = "Computes the CRC-32, Adler-32 or FNV-1a checksum of a text, as 8 hex digits",
        .parameters = checksum_schema,
        .flags = .{ .read_only = true },
        .call = checksum,
    },
};

comptime {
    talaria.exportTools(&tools);
}

pub const panic = talaria.panic;

fn checksum(arena: std.mem.Allocator, arguments: []const u8, context: talaria.CallContext) talaria.Outcome {
    const args = switch (talaria.parseObject(arena, arguments)) {
        .object => |object| object,
        .invalid => |message| return .{ .invalid_arguments = message },
    };
    var keys = args.iterator();
    while (keys.next()) |entry| {
        const key = entry.key_ptr.*;
        if (!std.mem.eql(u8, key, "text") and !std.mem.eql(u8, key, "algorithm")) {
            return .{ .invalid_arguments = std.fmt.allocPrint(arena, "unknown argument {s}; checksum takes text, algorithm", .{key}) catch "unknown argument" };
        }
    }
    const text = switch (args.get("text") orelse .null) {
        .string => |text| text,
        else => return .{ .invalid_arguments = "text is required and must be a string" },
    };
    const algorithm = switch (args.get("algorithm") orelse std.json.Value{ .string = "crc32" }) {
        .string => |name| name,
        else => return .{ .invalid_arguments = "algorithm must be a string: crc32, adler32 or fnv1a32" },
    };
    const sum: u32 = if (std.mem.eql(u8, algorithm, "crc32"))
        std.hash.Crc32.hash(text)
    else if (std.mem.eql(u8, algorithm, "adler32"))
        std.hash.Adler32.hash(text)
    else if (std.mem.eql(u8, algorithm, "fnv1a32"))
        std.hash.Fnv1a_32.hash(text)
    else
        return .{ .invalid_arguments = std.fmt.allocPrint(arena, "unknown algorithm {s}; use one of {s}, {s}, {s}", .{ algorithm, algorithms[0], algorithms[1], algorithms[2] }) catch "unknown algorithm" };
    talaria.logf(.debug, "{s} of {d} bytes (call {s})", .{ algorithm, text.len, context.call_id });
    const json = std.fmt.allocPrint(arena, "{{\"algorithm\":\"{s}\",\"checksum\":\"{x:0>8}\",\"bytes\":{d}}}", .{ algorithm, sum, text.len }) catch
        return .{ .failed = "out of memory" };
    return .{ .ok = json };
}
