#!/bin/sh
# A minimal MCP server over stdio for the /mcp tests: it answers
# initialize and tools/list (one tool, "shout"), and any other request
# with an empty result; notifications get no answer.
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"tiny","version":"1.0"}}}\n' "$id" ;;
  *'"method":"tools/list"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"shout","description":"Shouts.","inputSchema":{"type":"object","properties":{}}}]}}\n' "$id" ;;
  *)
    printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
  esac
done
