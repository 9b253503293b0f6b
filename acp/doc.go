// Package acp is dlgt's Agent Client Protocol agent (`dlgt acp`): an
// editor speaking ACP v1 on the agent's stdin/stdout drives dlgt
// Sessions through the client package, as the CLI, the MCP server and
// `dlgt ui` do. Nothing in it reaches into the daemon. Each ACP session
// is a dlgt Session: listed, readable and attachable from every other
// front-end, and kept when the editor goes away. docs/acp.md maps each
// ACP method and update to the dlgt method or evidence behind it.
package acp
