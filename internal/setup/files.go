package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dlgt-dev/dlgt/rpc"
)

// configMax bounds a config file read (~/.claude.json grows with the
// projects Claude Code has seen, but not this far).
const configMax = 64 << 20

// Statuses of one edited file.
const (
	Written   = "written"
	Unchanged = "unchanged"
)

// File is what an edit did to one file.
type File struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	Backup string `json:"backup,omitempty"` // the file as it was, when it existed and changed
	Diff   string `json:"diff,omitempty"`   // unified diff of the change
}

// EditFile applies edit to the file at path (empty when missing)
// and, when that changes it, backs the old file up and replaces it
// atomically. A symlinked config is written through.
func EditFile(path string, edit func(old []byte) ([]byte, error)) (File, error) {
	f := File{Path: path}
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	old, mode, exists, err := readConfigFile(real)
	if err != nil {
		return f, rpc.Errorf(rpc.CodeInvalidArgument, "reading %s: %v; nothing was changed", path, err)
	}
	updated, err := edit(old)
	if err != nil {
		return f, rpc.Errorf(rpc.CodeInvalidArgument, "%s: %v; nothing was changed", path, err)
	}
	if exists && bytes.Equal(updated, old) {
		f.Status = Unchanged
		return f, nil
	}
	f.Diff = unifiedDiff(path, old, updated)
	if !exists {
		if err := mkdirMissing(filepath.Dir(real), 0o700); err != nil {
			return f, rpc.Errorf(rpc.CodeInvalidArgument, "creating %s: %v", filepath.Dir(real), err)
		}
	} else {
		if f.Backup, err = backupFile(real, old, mode); err != nil {
			return f, rpc.Errorf(rpc.CodeInvalidArgument, "backing up %s: %v; nothing was changed", path, err)
		}
		// Another program (the harness itself) may have rewritten the
		// file meanwhile: its change must not be lost.
		if now, _, _, err := readConfigFile(real); err != nil || !bytes.Equal(now, old) {
			os.Remove(f.Backup)
			return f, rpc.Errorf(rpc.CodeInvalidArgument, "%s changed while it was being edited (is the harness running?); nothing was changed, run install again", path)
		}
	}
	if err := writeFileAtomic(real, updated, mode); err != nil {
		return f, rpc.Errorf(rpc.CodeInvalidArgument, "writing %s: %v", path, err)
	}
	f.Status = Written
	return f, nil
}

// readConfigFile reads a regular file of at most configMax bytes; a
// missing one reads as empty with mode 0600.
func readConfigFile(path string) ([]byte, fs.FileMode, bool, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, false, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(fh, configMax+1))
	if err != nil {
		return nil, 0, false, err
	}
	if len(data) > configMax {
		return nil, 0, false, fmt.Errorf("larger than %d MiB", configMax>>20)
	}
	return data, fi.Mode().Perm(), true, nil
}

// backupFile writes data to a new file next to path, named after it and
// the time, never over an existing one.
func backupFile(path string, data []byte, mode fs.FileMode) (string, error) {
	base := path + ".dlgt-backup-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = fh.Write(data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(name, mode) // whatever the umask
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("too many backups named %s*", base)
}

// mkdirMissing creates dir and its missing parents with mode perm
// (whatever the umask), leaving every existing directory as it is.
func mkdirMissing(dir string, perm fs.FileMode) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirMissing(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		return err
	}
	return os.Chmod(dir, perm)
}

// writeFileAtomic replaces path with data: a temporary file in the same
// directory, synced, given mode, then renamed over path. A failure leaves
// path as it was and removes the temporary file.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; a directory that cannot be synced is not
	// an error worth failing the install for.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ---- diff ------------------------------------------------------------------

// unifiedDiff shows the change from old to new as one hunk (install makes
// one splice per file): the lines between the common head and tail, with
// three lines of context.
func unifiedDiff(name string, old, new []byte) string {
	a, b := diffLines(old), diffLines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	const ctx = 3
	from := max(pre-ctx, 0)
	aTo, bTo := min(len(a)-suf+ctx, len(a)), min(len(b)-suf+ctx, len(b))
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", name, name)
	fmt.Fprintf(&w, "@@ -%s +%s @@\n", diffRange(from, aTo), diffRange(from, bTo))
	for i := from; i < pre; i++ {
		w.WriteString(" " + a[i])
	}
	for i := pre; i < len(a)-suf; i++ {
		w.WriteString("-" + a[i])
	}
	for i := pre; i < len(b)-suf; i++ {
		w.WriteString("+" + b[i])
	}
	for i := len(a) - suf; i < aTo; i++ {
		w.WriteString(" " + a[i])
	}
	return w.String()
}

func diffLines(s []byte) []string {
	lines := strings.SplitAfter(string(s), "\n")
	if n := len(lines); lines[n-1] == "" {
		lines = lines[:n-1]
	} else {
		lines[n-1] += "\n\\ No newline at end of file\n"
	}
	return lines
}

func diffRange(from, to int) string {
	if to == from {
		return fmt.Sprintf("%d,0", from)
	}
	return fmt.Sprintf("%d,%d", from+1, to-from)
}
