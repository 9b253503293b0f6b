package pty

// The tests run their children by re-executing the test binary: TestMain
// sees helperEnv and runs the named helper instead of the tests. Every helper
// that waits for something gives up after helperFailsafe, so a failing test
// never leaves processes behind for long.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	helperEnv      = "DLGT_PTY_HELPER"
	helperFailsafe = 60 * time.Second
)

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		runHelper(name, os.Args[1:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(name string, args []string) {
	switch name {
	case "lines": // print args[0] numbered lines
		n, _ := strconv.Atoi(args[0])
		for i := range n {
			fmt.Printf("line %d\n", i)
		}

	case "bulk": // write args[0] bytes of bulkByte(i), no newlines, then exit at once
		writeBulk(args[0])

	case "bulk-then-mark": // write args[0] bulk bytes, then create the file args[1], then wait
		writeBulk(args[0])
		if err := os.WriteFile(args[1], nil, 0o600); err != nil {
			os.Exit(11)
		}
		time.Sleep(helperFailsafe)
		os.Exit(9)

	case "exit3": // print, then exit with code 3
		fmt.Println("about to exit 3")
		os.Exit(3)

	case "echo": // echo stdin lines back as "got: <line>" until "quit" or EOF
		fmt.Println("echo ready")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "quit" {
				return
			}
			fmt.Printf("got: %s\n", sc.Text())
		}

	case "sleep": // print ready, then wait (killable by default signal handling)
		fmt.Println("sleep ready")
		time.Sleep(helperFailsafe)
		os.Exit(9)

	case "ignore-term": // ignore SIGTERM, print ready, wait
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		time.Sleep(helperFailsafe)
		os.Exit(9)

	case "silent": // never read stdin, never write, wait
		time.Sleep(helperFailsafe)
		os.Exit(9)

	case "winsize": // print the size, then print it again on every SIGWINCH
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH) // before "size", so no resize is missed
		r, c := termSize()
		fmt.Printf("size %d %d\n", r, c)
		for {
			select {
			case <-winch:
				r, c := termSize()
				fmt.Printf("winch %d %d\n", r, c)
			case <-time.After(helperFailsafe):
				os.Exit(9)
			}
		}

	case "env": // print cwd and environment as one JSON line
		wd, err := os.Getwd()
		if err != nil {
			wd = "error: " + err.Error()
		}
		b, _ := json.Marshal(envReport{Cwd: wd, Env: os.Environ()})
		fmt.Printf("%s\n", b)

	case "group": // start a grandchild in our process group; args[0] is "stay", "leave" or "usr2"
		runGroupLeader(args[0])

	case "grandchild": // see runGroupLeader
		runGrandchild()

	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		os.Exit(99)
	}
}

// writeBulk writes the first n (a decimal string) bulk bytes to stdout,
// exiting with 10 when it cannot.
func writeBulk(n string) {
	size, _ := strconv.Atoi(n)
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = bulkByte(i)
	}
	if _, err := os.Stdout.Write(buf); err != nil {
		os.Exit(10)
	}
}

// bulkByte is the i-th byte of the "bulk" helper's output: printable, never a
// newline (the terminal would turn "\n" into "\r\n"), and position dependent
// so that lost or reordered chunks are detected.
func bulkByte(i int) byte { return 'A' + byte(i%61) }

type envReport struct {
	Cwd string
	Env []string
}

func termSize() (rows, cols uint16) {
	ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return ws.Row, ws.Col
}

// runGroupLeader starts a grandchild that shares the terminal and the process
// group, and waits until the grandchild is ready (it reports over a pipe,
// since its terminal output goes to the test, not to us).
//
// "stay": wait for SIGUSR1, report it, then wait for the grandchild.
// "leave": exit 0 at once. The kernel sends SIGHUP to the foreground group
// when a session leader exits; the grandchild ignores it and so outlives us
// while holding the terminal open.
// "usr2": like "leave", but only once SIGUSR2 arrives (which the grandchild
// ignores).
//
// Neither process ever reads the terminal.
func runGroupLeader(mode string) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)

	ready, readyW, err := os.Pipe()
	if err != nil {
		os.Exit(20)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=grandchild")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{readyW} // fd 3 in the grandchild
	if err := cmd.Start(); err != nil {
		os.Exit(21)
	}
	readyW.Close()
	if _, err := ready.Read(make([]byte, 1)); err != nil {
		os.Exit(22)
	}

	switch mode {
	case "leave":
		fmt.Println("child leaving")
		os.Exit(0)
	case "usr2":
		fmt.Println("child waiting for SIGUSR2")
		select {
		case <-usr2:
			os.Exit(0)
		case <-time.After(helperFailsafe):
			os.Exit(9)
		}
	}
	fmt.Println("child ready")
	select {
	case <-usr1:
		fmt.Println("child got SIGUSR1")
	case <-time.After(helperFailsafe):
		os.Exit(9)
	}
	if err := cmd.Wait(); err != nil {
		os.Exit(23)
	}
}

func runGrandchild() {
	signal.Ignore(syscall.SIGHUP, syscall.SIGUSR2)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	fmt.Printf("grandchild ready pgid=%d\n", syscall.Getpgrp())
	ready := os.NewFile(3, "ready")
	ready.Write([]byte{1})
	ready.Close()
	select {
	case <-usr1:
		fmt.Println("grandchild got SIGUSR1")
	case <-time.After(helperFailsafe):
		os.Exit(9)
	}
}

// helperEnviron is a minimal environment that runs helper name. GORACE
// stops a -race child from sleeping a second before exiting with status 0
// (ThreadSanitizer's atexit_sleep_ms), which only slows the tests down.
func helperEnviron(name string, extra ...string) []string {
	base := []string{helperEnv + "=" + name, "PATH=/usr/bin:/bin", "GORACE=atexit_sleep_ms=0"}
	return append(base, extra...)
}

// startHelper starts helper name under a 24x80 PTY, collects its output,
// and on cleanup kills the group and closes the master.
func startHelper(t *testing.T, name string, args ...string) (*Process, *collector) {
	t.Helper()
	p := startBare(t, name, args...)
	return p, collect(t, p)
}

// guard is the failure guard for every wait in these tests. It is never a
// measured timing: it only turns a hang into a test failure.
const guard = 30 * time.Second

func ctxString(b []byte) string {
	const max = 400
	s := string(b)
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return strings.ReplaceAll(s, "\r", `\r`)
}
