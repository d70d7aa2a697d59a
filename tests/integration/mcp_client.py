"""The official MCP Python SDK's client (PyPI `mcp`) against the registry's MCP endpoint:
connect as it connects by default (the 2026-07-28 `server/discover` probe, then the
initialize handshake), list the tools, and call each with the arguments given. Prints one
JSON object: the tools' names and schemas, and each call's result.

usage: mcp_client.py URL TOKEN CALLS_JSON
  CALLS_JSON: [[label, tool, {arguments}], ...]; TOKEN "" sends no Authorization header.
  The CA bundle comes from SSL_CERT_FILE (the local registry's CA).
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url, token, calls):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = create_mcp_http_client(headers=headers)
    out = {"calls": {}}
    async with http, Client(streamable_http_client(url, http_client=http), raise_exceptions=True) as client:
        tools = (await client.list_tools()).model_dump(mode="json", by_alias=True)
        out["tools"] = [t["name"] for t in tools["tools"]]
        out["schemas"] = {t["name"]: t["inputSchema"] for t in tools["tools"]}
        for label, name, arguments in calls:
            result = (await client.call_tool(name, arguments)).model_dump(mode="json", by_alias=True)
            out["calls"][label] = {
                "isError": bool(result.get("isError")),
                "text": "".join(c.get("text", "") for c in result["content"] if c.get("type") == "text"),
                "structured": result.get("structuredContent"),
            }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
