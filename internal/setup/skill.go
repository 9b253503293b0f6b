package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dlgt-dev/dlgt/harness"
	"github.com/dlgt-dev/dlgt/rpc"
)

// Where the guide is installed: each harness's user skills directory, in
// a folder named after the skill.
const (
	SkillDirName  = "dlgt"
	SkillFileName = "SKILL.md"
	skillFileMode = fs.FileMode(0o644)
	skillDirMode  = fs.FileMode(0o755)
)

// Install and check statuses, one per target.
const (
	SkillWritten   = "written"   // install: the file now holds this binary's guide
	SkillUnchanged = "unchanged" // install: it already did; nothing was written
	SkillCurrent   = "current"   // check: the installed copy is this binary's guide
	SkillStale     = "stale"     // check: a copy is installed but differs
	SkillMissing   = "missing"   // check: no copy is installed
)

// SkillTarget is one harness's installed copy of the guide.
type SkillTarget struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Status  string `json:"status"`
	Detail  string `json:"detail,omitempty"`
}

// SkillTargets resolves where each harness of ds loads user skills from,
// using the environment getenv reads; a harness that loads none is skipped.
func SkillTargets(ds []harness.Descriptor, getenv func(string) string) ([]SkillTarget, error) {
	var out []SkillTarget
	for _, d := range ds {
		if d.SkillsDir == "" {
			continue
		}
		base, err := d.Config.Resolve(getenv)
		if err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidArgument, "%v: cannot find the %s skills directory", err, d.Name)
		}
		out = append(out, SkillTarget{Harness: d.Name, Path: filepath.Join(base, d.SkillsDir, SkillDirName, SkillFileName)})
	}
	return out, nil
}

// CheckSkill sets t.Status to current, stale or missing.
func CheckSkill(t *SkillTarget, guide []byte) {
	data, err := readSkillFile(t.Path, guide)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Status = SkillMissing
	case err != nil:
		t.Status, t.Detail = SkillStale, err.Error()
	case bytes.Equal(data, guide):
		t.Status = SkillCurrent
	default:
		t.Status = SkillStale
	}
}

// readSkillFile reads an installed copy, refusing anything but a regular
// file (through symlinks) and anything much larger than a guide.
func readSkillFile(path string, guide []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, int64(len(guide))+1))
}

// InstallSkill writes guide to t.Path unless it already holds it with
// mode 0644, and sets t.Status.
func InstallSkill(t *SkillTarget, guide []byte) error {
	path := t.Path
	// A symlinked SKILL.md (a dotfiles checkout) is written through, so
	// the link itself stays.
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%s is a symbolic link that does not resolve: %w", path, err)
		}
		path = real
	}
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", path)
		}
		if data, err := readSkillFile(path, guide); err == nil && bytes.Equal(data, guide) && fi.Mode().Perm() == skillFileMode {
			t.Status = SkillUnchanged
			return nil
		}
	}
	if err := mkdirMissing(filepath.Dir(path), skillDirMode); err != nil {
		return err
	}
	if err := writeFileAtomic(path, guide, skillFileMode); err != nil {
		return err
	}
	t.Status = SkillWritten
	return nil
}
