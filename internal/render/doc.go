// Package render writes dlgt's documents for a person or a model to read:
// the usage sentence, a Session's name and lines, results, fetch
// documents, events, the session table fitted to a width, the listing
// tables and the control commands' answers. The CLI's -o text output and
// the MCP server's tool answers both use it, so one fact is worded in one
// place. Nothing here talks to the daemon or knows a command line.
package render
