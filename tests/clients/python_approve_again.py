"""Approve, then call again, with the official Python MCP SDK.

A client without an elicitation callback (so Warden cannot ask in-band) gets
the approval id, a person approves with the CLI, and the identical call then
runs exactly once; the next identical call needs a new approval.

Run by the e2e test `python_sdk` with the interpreter `cargo xtask test`
installs the SDK into (`target/python`, from PyPI); by hand:

    python3 -m venv target/python && target/python/bin/pip install 'mcp>=2,<3'
    cargo build -p warden
    target/python/bin/python tests/clients/python_approve_again.py target/debug/warden
"""

import asyncio
import pathlib
import shutil
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = pathlib.Path(__file__).resolve().parents[2]


def warden(binary, data, *args):
    out = subprocess.run([binary, "--data-dir", data, *args], capture_output=True, text=True)
    assert out.returncode == 0, out
    return out.stdout


async def run(binary, data):
    params = StdioServerParameters(command=binary, args=["--data-dir", data, "serve"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            args = {"text": "py", "transform": "upper"}

            first = await session.call_tool("echo_echo", args)
            approval = (first.meta or {}).get("warden/approvalId")
            assert first.is_error and approval, first
            again = await session.call_tool("echo_echo", args)
            assert (again.meta or {}).get("warden/approvalId") == approval, again

            warden(binary, data, "approvals", "approve", approval)
            ran = await session.call_tool("echo_echo", args)
            assert not ran.is_error, ran
            assert ran.structured_content == {"text": "PY", "chars": 2}, ran

            once = await session.call_tool("echo_echo", args)
            assert once.is_error, once
            assert (once.meta or {}).get("warden/approvalId") != approval, once
            print("OK: approved out of band, the identical call ran once")


def main():
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as pkgs:
        # The bundled echo is ungated for a model; install a copy gated for it.
        echo = pathlib.Path(pkgs) / "echo"
        shutil.copytree(ROOT / "packages" / "echo", echo)
        (echo / "SHA256SUMS").unlink(missing_ok=True)
        manifest = echo / "manifest.toml"
        manifest.write_text(
            manifest.read_text().replace('loop_run = "ungated"', 'loop_run = "gated_unless_granted"')
        )
        warden(binary, data, "install", "--replace", str(echo))
        asyncio.run(run(binary, data))


if __name__ == "__main__":
    main()
