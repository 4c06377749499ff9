"""The structured `auth_required`, seen by the official Python MCP SDK.

A call to a tool whose account is not connected comes back as an error
result whose `structuredContent` (and `_meta["warden/auth"]`) carry the
code, reason, vendor, scopes, extension and the command that connects the
account. The client approves in-band when Warden asks (elicitation).

Run by the e2e test `python_sdk`; by hand:

    target/python/bin/python tests/clients/python_auth_required.py target/debug/warden
"""

import asyncio
import pathlib
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def approve(context, params):
    return types.ElicitResult(action="accept", content={"decision": "approve_once"})


async def run(binary, data):
    params = StdioServerParameters(command=binary, args=["--data-dir", data, "serve"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=approve) as session:
            await session.initialize()
            result = await session.call_tool("github_get_repo", {"owner": "octo", "repo": "hello"})
            assert result.is_error, result
            fields = result.structured_content
            expected = {
                "code": "auth_required",
                "reason": "missing",
                "vendor": "github",
                "scopes": ["repo"],
                "extension": "github",
                "connect": "warden auth connect github",
            }
            for name, value in expected.items():
                assert fields.get(name) == value, (name, fields)
            assert (result.meta or {}).get("warden/auth") == fields, result.meta
            print("OK: auth_required is structured for the Python SDK")


def main():
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    with tempfile.TemporaryDirectory() as data:
        asyncio.run(run(binary, data))


if __name__ == "__main__":
    main()
