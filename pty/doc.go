// Package pty hosts one child process under a pseudo-terminal: start it in
// its own session and process group, write its input, resize it, signal its
// process group, and drain its output to the end before reporting its exit.
package pty
