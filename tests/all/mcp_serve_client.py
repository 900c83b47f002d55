"""The Python MCP SDK's reference client driving `talaria mcp serve` (tests/all/mcp_serve.rs).

Usage: mcp_serve_client.py stdio TALARIA_BINARY ARG...   (spawns the server itself)
       mcp_serve_client.py http URL KEY
Prints one JSON object: what the server answered at each step.
"""

import asyncio
import json
import os
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(result):
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def scenario(read, write):
    out = {}
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        out["protocol"] = init.protocol_version
        out["server"] = init.server_info.name
        out["tools"] = [tool.name for tool in (await session.list_tools()).tools]
        progress = []

        async def on_progress(value, total, message):
            progress.append(message)

        first = await session.call_tool(
            "run_prompt", {"prompt": "What is the answer?"}, progress_callback=on_progress
        )
        out["first"] = dump(first)
        out["progress"] = progress
        session_id = (first.structured_content or {}).get("session_id", "")
        out["listed"] = dump(await session.call_tool("list_sessions", {"limit": 5}))
        out["found"] = dump(await session.call_tool("search_sessions", {"query": "answer"}))
        out["second"] = dump(
            await session.call_tool(
                "run_prompt", {"prompt": "And again?", "session_id": session_id[:12]}
            )
        )
        out["read"] = dump(await session.call_tool("read_session", {"session_id": session_id}))
        out["unknown_session"] = dump(
            await session.call_tool("read_session", {"session_id": "no-such-session"})
        )
        out["bad_arguments"] = dump(await session.call_tool("list_sessions", {"limit": "many"}))
    return out


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        # The SDK gives a server a minimal environment; the profile comes from ours.
        passed = ("TALARIA_HOME", "HOME", "TALARIA_API_KEY")
        env = {name: os.environ[name] for name in passed if name in os.environ}
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:], env=env)
        async with stdio_client(params) as (read, write):
            out = await scenario(read, write)
    else:
        url, key = sys.argv[2], sys.argv[3]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            out = await scenario(read, write)
    print(json.dumps(out))


asyncio.run(main())
