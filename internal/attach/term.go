package attach

import (
	"os"

	"golang.org/x/sys/unix"
)

// Wrapper is a writer over another stream, which Fd looks through (an
// output that clears an indicator first, say).
type Wrapper interface{ Unwrap() any }

// Fd is the file descriptor of f when f is an *os.File (or wraps one).
func Fd(f any) (int, bool) {
	for {
		w, ok := f.(Wrapper)
		if !ok {
			break
		}
		f = w.Unwrap()
	}
	file, ok := f.(*os.File)
	if !ok || file == nil {
		return 0, false
	}
	return int(file.Fd()), true
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f any) bool {
	fd, ok := Fd(f)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// Size is the terminal size of f, ok false when f is no terminal or
// reports none.
func Size(f any) (rows, cols int, ok bool) {
	fd, isFile := Fd(f)
	if !isFile {
		return 0, 0, false
	}
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 || ws.Col == 0 {
		return 0, 0, false
	}
	return int(ws.Row), int(ws.Col), true
}

// Width is f's terminal width, else 80.
func Width(f any) int {
	if _, cols, ok := Size(f); ok {
		return cols
	}
	return 80
}
