// Package pty hosts one child process under a pseudo-terminal: start it in
// its own session and process group, write its input, resize it, signal its
// process group, and drain its output to the end before reporting its exit.
//
// # Ownership
//
// [Start] returns a [Process] that owns three things:
//
//   - the PTY master file descriptor. The caller reads output from it with
//     [Process.Read] (one reader goroutine is the intended use), writes input
//     with [Process.Write], and must call [Process.Close] exactly when it no
//     longer wants output. The parent never keeps the slave side open: the
//     slave belongs to the child and whatever the child spawns.
//   - a reaper goroutine, started by Start, that waits for the child and
//     records its [ExitStatus]. Exit is therefore recorded even if nobody
//     reads output or calls [Process.Wait]. Nothing else may wait for the
//     child's pid.
//   - the child's process group. The child is a session leader (setsid) with
//     the PTY as its controlling terminal, so its pid is also its process
//     group id and [Process.Signal] reaches everything the child started that
//     did not move itself into another group.
//
// # End of output versus exit
//
// Two independent events end a session, and they can arrive in either order:
//
//   - Exit: the reaper reaped the child; [Process.Done] is closed and
//     [Process.Wait] returns.
//   - End of output: every open descriptor of the PTY slave has been closed
//     (the child's, and those of any grandchildren that inherited it). On
//     Linux the master then reads the remaining buffered bytes and after them
//     fails with EIO, which [Process.Read] reports as [io.EOF].
//
// The reaper usually notices the exit before the reader has drained the last
// bytes the child wrote, so exit must never be taken as "output is complete":
// keep calling Read until io.EOF, and only then consider the transcript
// final. Conversely, Read can return io.EOF long before exit if the child
// closed its terminal (for example a program that daemonizes), and Read may
// keep returning data after exit while a grandchild still holds the slave.
// Closing the master early throws away whatever the kernel still buffers.
//
// A grandchild that ignores SIGHUP can keep the slave open indefinitely after
// the child exited. The daemon's policy for that is: after Done, give the
// reader a grace period to reach io.EOF, then [Process.Kill] the group, and
// as a last resort Close the master (which hangs up the terminal and unblocks
// a pending Read with an error wrapping [os.ErrClosed]).
//
// The master is registered with Go's runtime poller (non-blocking), so a
// blocked Read or Write is woken by Close and honours deadlines set with
// [Process.SetReadDeadline]; no goroutine is ever stuck in a read(2) that
// nothing can interrupt.
package pty
